{{/*
STUNner's chart values (helm/stunner 1.2.0): kturn's chart takes them too, so that a STUNner
values file installs kturn with only the image names changed. The table of every STUNner key,
its kturn key or why it has none, is in docs/migration-from-stunner.md#the-helm-chart;
tests/deploy/stunner_chart_test.py checks each against STUNner's own chart.

Every template that reads a value with a STUNner counterpart starts with
  {{- include "kturn.stunner.values" . }}
which writes each STUNner key that holds a value onto its kturn key, in .Values (one map for all
the templates of a render). Every step gives the same result when it runs again (a copy, a merge
of the same map, an argument list rebuilt from its source), so the templates may include it in
any order, each of them once.

Precedence: a STUNner key that holds a value wins over its kturn counterpart. kturn's values.yaml
gives every kturn key a default, and a template cannot tell a default from a value the user
gave, so the STUNner key, present only when the user gave it, is the one to follow. An empty
STUNner key (null, {}, [] or "", as STUNner's values.yaml has for most optional ones) leaves the
kturn key as it is. A map is merged into the kturn key's map, key by key at every level, as Helm
merges a values file into a chart's defaults (STUNner's users relied on that: their
nodeSelector kept STUNner's kubernetes.io/os: linux); lists and scalars replace. So STUNner's
{runAsNonRoot: true} keeps kturn's user, seccomp profile and dropped capabilities.
*/}}

{{/* "true" when STUNner's names and labels are rendered too (values stunnerCompat.enabled: auto
is on when the values hold any of STUNner's own top-level keys). */}}
{{- define "kturn.stunner.compat" -}}
{{- $mode := "auto" -}}
{{- $enabled := (.Values.stunnerCompat | default dict).enabled -}}
{{- if not (kindIs "invalid" $enabled) -}}{{- $mode = toString $enabled -}}{{- end -}}
{{- if eq $mode "auto" -}}
{{- $v := .Values -}}
{{- if or $v.stunnerGatewayOperator $v.stunnerAuthService $v.logging -}}true{{- end -}}
{{- else if eq $mode "true" -}}true
{{- else if ne $mode "false" -}}
{{- fail (printf "stunnerCompat.enabled: %q is not auto, true or false" $mode) -}}
{{- end -}}
{{- end }}

{{/* STUNner's logging.operator.level (zap: debug, info, warn, error, dpanic, panic, fatal, or an
integer: debug levels of increasing verbosity) as a kturn log spec. A kturn spec (with a colon)
is taken as it is. */}}
{{- define "kturn.stunner.logLevel" -}}
{{- $l := . | toString | lower | trim -}}
{{- if contains ":" $l -}}{{ . }}
{{- else if eq $l "debug" -}}all:DEBUG
{{- else if eq $l "info" -}}all:INFO
{{- else if or (eq $l "warn") (eq $l "warning") -}}all:WARN
{{- else if has $l (list "error" "dpanic" "panic" "fatal") -}}all:ERROR
{{- else if eq $l "1" -}}all:DEBUG
{{- else if regexMatch "^[0-9]+$" $l -}}all:TRACE
{{- else -}}
{{- fail (printf "logging level %q: not a zap level (debug, info, warn, error, dpanic, panic, fatal, or an integer)" $l) -}}
{{- end -}}
{{- end }}

{{/* STUNner's log formats: text or json in any case (STUNner's chart fails on others), and
controller-runtime's --zap-encoder console or json. */}}
{{- define "kturn.stunner.logFormat" -}}
{{- $f := .value | toString | lower -}}
{{- if or (eq $f "text") (eq $f "console") -}}text
{{- else if eq $f "json" -}}json
{{- else -}}
{{- fail (printf "%s: %q must be text or json" .key .value) -}}
{{- end -}}
{{- end }}

{{/* The port of a [host]:port bind address of STUNner's operator flags. */}}
{{- define "kturn.stunner.port" -}}
{{- $port := regexFind "[0-9]+$" .value -}}
{{- if not (and $port (hasSuffix (printf ":%s" $port) .value) (gt (atoi $port) 0)) -}}
{{- fail (printf "stunnerGatewayOperator.deployment.container.manager.args: %s=%s: kturn-operator needs a [host]:port with a port number" .flag .value) -}}
{{- end -}}
{{- $port -}}
{{- end }}

{{/* Merges the map .from into the map .into, key by key at every level (Helm's way with values):
a value that is a map where .into has a map too is merged, any other value replaces. */}}
{{- define "kturn.stunner.merge" -}}
{{- $into := .into -}}
{{- range $key, $value := .from -}}
{{- if and (kindIs "map" $value) (kindIs "map" (index $into $key)) -}}
{{- include "kturn.stunner.merge" (dict "into" (index $into $key) "from" $value) -}}
{{- else -}}
{{- $_ := set $into $key $value -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/* A value that counts as given: not null and, for a map, list or string, not empty. */}}
{{- define "kturn.stunner.given" -}}
{{- if not (kindIs "invalid" .) -}}
{{- if or (kindIs "map" .) (kindIs "slice" .) (kindIs "string" .) -}}
{{- if not (empty .) -}}true{{- end -}}
{{- else -}}true
{{- end -}}
{{- end -}}
{{- end }}

{{- define "kturn.stunner.values" -}}
{{- $v := .Values -}}
{{- if and (kindIs "string" $v.namespace) (not $v.namespace) -}}
{{- /* STUNner's chart reads "" as the release namespace, which is where kturn's puts it all. */ -}}
{{- $_ := set $v "namespace" (dict "create" false) -}}
{{- else if kindIs "string" $v.namespace -}}
{{- fail (printf "namespace: %q: STUNner's chart moves its objects to this namespace; kturn's puts every object in the release namespace (namespace.create is kturn's key here): install with -n %s instead" $v.namespace $v.namespace) -}}
{{- end -}}
{{- $empty := dict -}}
{{- $logging := $v.logging | default $empty -}}
{{- $sgo := $v.stunnerGatewayOperator | default $empty -}}
{{- $opDeploy := $sgo.deployment | default $empty -}}
{{- $manager := ($opDeploy.container | default $empty).manager | default $empty -}}
{{- $dpSection := $sgo.dataplane | default $empty -}}
{{- $dp := $dpSection.spec | default $empty -}}
{{- $sas := $v.stunnerAuthService | default $empty -}}
{{- $authDeploy := $sas.deployment | default $empty -}}
{{- $authContainer := ($authDeploy.container | default $empty).authService | default $empty -}}

{{- /* [STUNner map, STUNner key, kturn map, kturn key]: a map merged, anything else copied. */ -}}
{{- $copies := list
  (list $opDeploy "replicas" $v.operator "replicas")
  (list $opDeploy "podLabels" $v.operator "podLabels")
  (list $opDeploy "podAnnotations" $v.operator "podAnnotations")
  (list $opDeploy "affinity" $v.operator "affinity")
  (list $opDeploy "tolerations" $v.operator "tolerations")
  (list $opDeploy "nodeSelector" $v.operator "nodeSelector")
  (list $opDeploy "imagePullSecrets" $v.operator "imagePullSecrets")
  (list $opDeploy "topologySpreadConstraints" $v.operator "topologySpreadConstraints")
  (list ($manager.image | default $empty) "name" $v.operator.image "repository")
  (list ($manager.image | default $empty) "tag" $v.operator.image "tag")
  (list ($manager.image | default $empty) "pullPolicy" $v.operator.image "pullPolicy")
  (list $manager "resources" $v.operator "resources")
  (list $dp "replicas" $v.dataplane "replicas")
  (list ($dp.image | default $empty) "name" $v.dataplane.image "repository")
  (list ($dp.image | default $empty) "tag" $v.dataplane.image "tag")
  (list ($dp.image | default $empty) "pullPolicy" $v.dataplane.image "pullPolicy")
  (list $dp "imagePullSecrets" $v.dataplane "imagePullSecrets")
  (list $dp "command" $v.dataplane "command")
  (list $dp "args" $v.dataplane "args")
  (list $dp "env" $v.dataplane "env")
  (list $dp "resources" $v.dataplane "resources")
  (list $dp "terminationGracePeriodSeconds" $v.dataplane "terminationGracePeriodSeconds")
  (list $dp "enableMetricsEndpoint" $v.dataplane "enableMetricsEndpoint")
  (list $dp "hostNetwork" $v.dataplane "hostNetwork")
  (list $dp "labels" $v.dataplane "labels")
  (list $dp "annotations" $v.dataplane "annotations")
  (list $dp "affinity" $v.dataplane "affinity")
  (list $dp "tolerations" $v.dataplane "tolerations")
  (list $dp "topologySpreadConstraints" $v.dataplane "topologySpreadConstraints")
  (list $sas "enabled" $v.auth "enabled")
  (list $authDeploy "replicas" $v.auth "replicas")
  (list $authDeploy "podLabels" $v.auth "podLabels")
  (list $authDeploy "podAnnotations" $v.auth "podAnnotations")
  (list $authDeploy "affinity" $v.auth "affinity")
  (list $authDeploy "tolerations" $v.auth "tolerations")
  (list $authDeploy "nodeSelector" $v.auth "nodeSelector")
  (list $authDeploy "imagePullSecrets" $v.auth "imagePullSecrets")
  (list $authDeploy "topologySpreadConstraints" $v.auth "topologySpreadConstraints")
  (list ($authContainer.image | default $empty) "name" $v.auth.image "repository")
  (list ($authContainer.image | default $empty) "tag" $v.auth.image "tag")
  (list ($authContainer.image | default $empty) "pullPolicy" $v.auth.image "pullPolicy")
  (list $authContainer "resources" $v.auth "resources")
  (list $opDeploy "securityContext" $v.operator "podSecurityContext")
  (list $manager "securityContext" $v.operator "securityContext")
  (list $dp "securityContext" $v.dataplane "podSecurityContext")
  (list $dp "containerSecurityContext" $v.dataplane "containerSecurityContext")
  (list $authContainer "securityContext" $v.auth "securityContext")
-}}
{{- range $copies -}}
{{- $value := index (index . 0) (index . 1) -}}
{{- $into := index . 2 -}}
{{- $key := index . 3 -}}
{{- if include "kturn.stunner.given" $value -}}
{{- if and (kindIs "map" $value) (kindIs "map" (index $into $key)) -}}
{{- include "kturn.stunner.merge" (dict "into" (index $into $key) "from" $value) -}}
{{- else -}}
{{- $_ := set $into $key $value -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* STUNner's auth service mints credentials for every Gateway (it has no key to choose one):
with a stunnerAuthService section, so does kturn-auth. */ -}}
{{- if include "kturn.stunner.given" $sas -}}
{{- $_ := set $v.auth "gateway" "" -}}
{{- end -}}

{{- /* The operator's container args, flag by flag. STUNner's chart appends --zap-encoder,
--zap-log-level and --dataplane-mode from logging.operator and dataplane.mode after them, so
those keys win over the same flags here, as they do below. */ -}}
{{- $mode := "" -}}
{{- range $arg := $manager.args | default list -}}
{{- $flag := regexReplaceAll "=.*$" (toString $arg) "" -}}
{{- $value := trimPrefix (printf "%s=" $flag) (toString $arg) -}}
{{- $hasValue := contains "=" (toString $arg) -}}
{{- if eq $flag "--health-probe-bind-address" -}}
{{- $_ := set $v.operator.health "port" (include "kturn.stunner.port" (dict "flag" $flag "value" $value) | atoi) -}}
{{- else if eq $flag "--metrics-bind-address" -}}
{{- $_ := set $v.operator.metrics "port" (include "kturn.stunner.port" (dict "flag" $flag "value" $value) | atoi) -}}
{{- else if eq $flag "--config-discovery-address" -}}
{{- $_ := set $v.operator.cds "port" (include "kturn.stunner.port" (dict "flag" $flag "value" $value) | atoi) -}}
{{- else if and (eq $flag "--controller-name") $hasValue -}}
{{- $_ := set $v.operator "controllerName" $value -}}
{{- else if eq $flag "--endpoint-discovery" -}}
{{- $_ := set $v.operator "endpointDiscovery" (or (not $hasValue) (eq (lower $value) "true")) -}}
{{- else if and (eq $flag "--zap-log-level") $hasValue -}}
{{- $_ := set $v.operator.log "level" (include "kturn.stunner.logLevel" $value) -}}
{{- else if and (eq $flag "--zap-encoder") $hasValue -}}
{{- $_ := set $v.operator.log "format" (include "kturn.stunner.logFormat" (dict "key" "--zap-encoder" "value" $value)) -}}
{{- else if and (eq $flag "--dataplane-mode") $hasValue -}}
{{- $mode = $value -}}
{{- else if has $flag (list "--leader-elect" "--throttle-timeout" "--zap-devel" "--zap-stacktrace-level" "--zap-time-encoding") -}}
{{- /* kturn-operator always elects a leader, renders each change as it comes (no throttle),
and logs its own way: nothing to carry over. */ -}}
{{- else -}}
{{- fail (printf "stunnerGatewayOperator.deployment.container.manager.args: %q has no kturn-operator counterpart (docs/migration-from-stunner.md#the-helm-chart)" (toString $arg)) -}}
{{- end -}}
{{- end -}}
{{- with $logging.operator -}}
{{- if include "kturn.stunner.given" .level -}}
{{- $_ := set $v.operator.log "level" (include "kturn.stunner.logLevel" .level) -}}
{{- end -}}
{{- if include "kturn.stunner.given" .format -}}
{{- $_ := set $v.operator.log "format" (include "kturn.stunner.logFormat" (dict "key" "logging.operator.format" "value" .format)) -}}
{{- end -}}
{{- end -}}

{{- /* dataplane.mode: managed is kturn's only mode, the Dataplane `default` rendered; STUNner's
legacy mode (stunnerd pods deployed by the user, none by the operator) does not exist in
kturn-operator, which renders every Gateway's Deployment. */ -}}
{{- if include "kturn.stunner.given" $dpSection.mode -}}
{{- $mode = $dpSection.mode -}}
{{- end -}}
{{- if and $mode (ne (toString $mode) "managed") -}}
{{- fail (printf "stunnerGatewayOperator.dataplane.mode: %q: kturn-operator renders every Gateway's Deployment itself (STUNner's managed mode) and has no other mode" (toString $mode)) -}}
{{- end -}}

{{- /* STUNner's dataplane command names its image's binary, stunnerd; kturn's image holds
kturnd only. A command that starts with stunnerd runs kturnd, unless the image is a stunnerd
image itself (stunnerd following kturn's config discovery: docs/cds.md). */ -}}
{{- $command := $v.dataplane.command | default list -}}
{{- if and $command (eq (toString (first $command)) "stunnerd") (not (hasPrefix "stunnerd" (base (toString $v.dataplane.image.repository)))) -}}
{{- $_ := set $v.dataplane "command" (prepend (rest $command) "kturnd") -}}
{{- end -}}

{{- /* logging.dataplane.format: STUNner's chart appends --log-format to the Dataplane's args;
kturnd takes the same flag. */ -}}
{{- with $logging.dataplane -}}
{{- if include "kturn.stunner.given" .format -}}
{{- $format := include "kturn.stunner.logFormat" (dict "key" "logging.dataplane.format" "value" .format) -}}
{{- $args := list -}}
{{- range ($dp.args | default $v.dataplane.args) -}}
{{- if not (hasPrefix "--log-format=" (toString .)) -}}
{{- $args = append $args . -}}
{{- end -}}
{{- end -}}
{{- $_ := set $v.dataplane "args" (append $args (printf "--log-format=%s" $format)) -}}
{{- end -}}
{{- end -}}

{{- /* The auth service's args: stunner-auth-service's flags, which kturn-auth shares; the chart
sets the CDS address, port and log flags itself, so they map onto its keys. */ -}}
{{- $verbose := false -}}
{{- $authLevel := "" -}}
{{- range $arg := $authContainer.args | default list -}}
{{- $flag := regexReplaceAll "=.*$" (toString $arg) "" -}}
{{- $value := trimPrefix (printf "%s=" $flag) (toString $arg) -}}
{{- if and (has $flag (list "--port" "-p")) (contains "=" (toString $arg)) -}}
{{- if not (regexMatch "^[0-9]+$" $value) -}}
{{- fail (printf "stunnerAuthService.deployment.container.authService.args: %s: not a port number" (toString $arg)) -}}
{{- end -}}
{{- $_ := set $v.auth "port" (atoi $value) -}}
{{- else if has (toString $arg) (list "-v" "--verbose") -}}
{{- $verbose = true -}}
{{- else if and (has $flag (list "--log" "-l")) (contains "=" (toString $arg)) -}}
{{- $authLevel = $value -}}
{{- else if and (eq $flag "--log-format") (contains "=" (toString $arg)) -}}
{{- $_ := set $v.auth.log "format" (include "kturn.stunner.logFormat" (dict "key" "stunnerAuthService args --log-format" "value" $value)) -}}
{{- else -}}
{{- fail (printf "stunnerAuthService.deployment.container.authService.args: %q has no kturn-auth counterpart in the chart (docs/migration-from-stunner.md#the-helm-chart)" (toString $arg)) -}}
{{- end -}}
{{- end -}}
{{- /* As stunner-auth-service: -l wins over -v, which is all:DEBUG. */ -}}
{{- if $authLevel -}}
{{- $_ := set $v.auth.log "level" $authLevel -}}
{{- else if $verbose -}}
{{- $_ := set $v.auth.log "level" "all:DEBUG" -}}
{{- end -}}
{{- with $logging.authService -}}
{{- if include "kturn.stunner.given" .format -}}
{{- $_ := set $v.auth.log "format" (include "kturn.stunner.logFormat" (dict "key" "logging.authService.format" "value" .format)) -}}
{{- end -}}
{{- end -}}
{{- end }}
