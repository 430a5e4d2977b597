"""The part of Kubernetes' CRD validation kturn's CRDs rely on, for tests without an API server.

validate(value, schema) checks a value against an apiextensions.k8s.io/v1 structural schema the
way the API server does on create (defaulting, then validation, with strict field validation as
kubectl applies it): type, properties, required, additionalProperties, enum, items, minimum,
maximum, minLength, maxLength, minItems, maxItems, pattern, anyOf, nullable, default,
x-kubernetes-int-or-string and x-kubernetes-preserve-unknown-fields.

structural_problems(schema) lists what the API server would refuse in the schema itself (the
"structural schema" rules of the CRD documentation) and keywords this validator does not know,
so a CRD can never use a rule that these tests silently skip.

KubeYamlLoader reads YAML as Kubernetes does (through JSON): timestamps stay strings.
"""

import re

import yaml

# Keywords validate() enforces.
ENFORCED = {
    "type", "properties", "required", "additionalProperties", "enum", "items", "minimum",
    "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern", "anyOf", "nullable",
    "default", "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields",
}
# Keywords that only annotate (documentation, server-side apply merge strategy, formats the API
# server does not reject on).
ANNOTATIONS = {
    "description", "format", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
}
INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


class KubeYamlLoader(yaml.SafeLoader):
    """SafeLoader without the timestamp type: sigs.k8s.io/yaml converts YAML to JSON first."""


KubeYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_all(path):
    """Every non-empty YAML document in the file at path."""
    with open(path, encoding="utf-8") as f:
        return [doc for doc in yaml.load_all(f, Loader=KubeYamlLoader) if doc is not None]


def validate(value, schema, path="", root=True):
    """Problems of value against schema, each "path: what is wrong"; empty when valid."""
    errors = []
    _check_node(value, schema, path or "<root>", errors, root)
    return errors


def _check_node(value, schema, path, errors, root=False):
    if value is None:
        if not schema.get("nullable", False):
            errors.append(f"{path}: must not be null")
        return
    if not _check_type(value, schema, path, errors):
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not one of {schema['enum']}")
    if isinstance(value, str):
        _check_string(value, schema, path, errors)
    elif isinstance(value, (int, float)):
        _check_number(value, schema, path, errors)
    elif isinstance(value, list):
        _check_array(value, schema, path, errors)
    elif isinstance(value, dict):
        _check_object(value, schema, path, errors, root)


def _type_ok(value, type_name):
    if type_name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    expected = {"string": str, "boolean": bool, "array": list, "object": dict}[type_name]
    return isinstance(value, expected)


def _check_type(value, schema, path, errors):
    if schema.get("x-kubernetes-int-or-string"):
        ok = _type_ok(value, "integer") or _type_ok(value, "string")
        if not ok:
            errors.append(f"{path}: must be an integer or a string, not {type(value).__name__}")
        return ok
    if "anyOf" in schema:
        branches = [validate(value, branch, path, root=False) for branch in schema["anyOf"]]
        if all(branches):
            errors.append(f"{path}: matches none of anyOf: {branches}")
            return False
    type_name = schema.get("type")
    if type_name is None or _type_ok(value, type_name):
        return True
    errors.append(f"{path}: must be of type {type_name}, not {type(value).__name__}")
    return False


def _check_string(value, schema, path, errors):
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(f"{path}: shorter than {schema['minLength']}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(f"{path}: longer than {schema['maxLength']}")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append(f"{path}: {value!r} does not match {schema['pattern']}")


def _check_number(value, schema, path, errors):
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{path}: {value} below minimum {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{path}: {value} above maximum {schema['maximum']}")


def _check_array(value, schema, path, errors):
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(f"{path}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(f"{path}: more than {schema['maxItems']} items")
    for i, item in enumerate(value):
        _check_node(item, schema.get("items", {}), f"{path}[{i}]", errors)


def _check_object(value, schema, path, errors, root):
    properties = schema.get("properties", {})
    present = {}
    for key, item in value.items():
        if item is None and key in properties and not properties[key].get("nullable", False):
            continue  # the API server prunes nulls of non-nullable fields before defaulting
        present[key] = item
    for key, sub in properties.items():
        if key not in present and "default" in sub:
            present[key] = sub["default"]
    for key in schema.get("required", []):
        if key not in present:
            errors.append(f"{_join(path, key)}: required field missing")
    for key, item in present.items():
        child = _join(path, key)
        if root and key == "metadata":
            _check_type(item, {"type": "object"}, child, errors)  # ObjectMeta: the server's own
        elif key in properties:
            _check_node(item, properties[key], child, errors)
        elif "additionalProperties" in schema:
            _check_node(item, schema["additionalProperties"], child, errors)
        elif not schema.get("x-kubernetes-preserve-unknown-fields", False):
            errors.append(f"{child}: unknown field")


def _join(path, key):
    return key if path == "<root>" else f"{path}.{key}"


def structural_problems(schema, path="<root>"):
    """What makes schema non-structural (or unknown to validate()), each "path: problem"."""
    problems = []
    _structural_node(schema, path, problems, root=True)
    return problems


def _structural_node(node, path, problems, root=False):
    if not isinstance(node, dict):
        problems.append(f"{path}: schema must be a mapping")
        return
    unknown = set(node) - ENFORCED - ANNOTATIONS
    if unknown:
        problems.append(f"{path}: keywords not understood by this validator: {sorted(unknown)}")
    _structural_type(node, path, problems)
    _structural_children(node, path, problems)
    if "default" in node:
        problems += validate(node["default"], node, f"{path}.default", root=False)
    if root:
        _structural_root(node, path, problems)


def _structural_type(node, path, problems):
    if node.get("x-kubernetes-preserve-unknown-fields") not in (None, True):
        problems.append(f"{path}: x-kubernetes-preserve-unknown-fields must be true if set")
    if node.get("x-kubernetes-int-or-string"):
        if "type" in node:
            problems.append(f"{path}: an int-or-string node must not set type")
        if node.get("anyOf", INT_OR_STRING_ANY_OF) != INT_OR_STRING_ANY_OF:
            problems.append(f"{path}: anyOf of an int-or-string node must be integer|string")
        return
    if "anyOf" in node:
        problems.append(f"{path}: anyOf only allowed as the int-or-string pattern")
    if node.get("type") not in ("object", "array", "string", "integer", "number", "boolean"):
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            problems.append(f"{path}: missing or invalid type {node.get('type')!r}")
    if "enum" in node:
        for value in node["enum"]:
            problems += validate(value, {"type": node.get("type")}, f"{path}.enum", root=False)


def _structural_children(node, path, problems):
    properties = node.get("properties", {})
    if properties and "additionalProperties" in node:
        problems.append(f"{path}: properties and additionalProperties are mutually exclusive")
    if (properties or "additionalProperties" in node) and node.get("type") != "object":
        problems.append(f"{path}: properties on a node that is not of type object")
    if "items" in node and node.get("type") != "array":
        problems.append(f"{path}: items on a node that is not of type array")
    if node.get("type") == "array" and not isinstance(node.get("items"), dict):
        problems.append(f"{path}: an array must have one items schema")
    for key in node.get("required", []):
        if key not in properties:
            problems.append(f"{path}: required field {key} is not a property")
    for key, sub in properties.items():
        _structural_node(sub, f"{path}.{key}", problems)
    if "additionalProperties" in node:
        _structural_node(node["additionalProperties"], f"{path}.additionalProperties", problems)
    if "items" in node:
        _structural_node(node["items"], f"{path}[]", problems)
        _structural_map_keys(node, path, problems)


def _structural_map_keys(node, path, problems):
    items = node["items"] if isinstance(node["items"], dict) else {}
    item_properties = items.get("properties", {})
    for key in node.get("x-kubernetes-list-map-keys", []):
        if key not in items.get("required", []) and "default" not in item_properties.get(key, {}):
            problems.append(f"{path}: list map key {key} must be required or defaulted")


def _structural_root(node, path, problems):
    if node.get("type") != "object":
        problems.append(f"{path}: the root must be of type object")
    metadata = node.get("properties", {}).get("metadata")
    if metadata is not None and set(metadata) - {"type", "description"}:
        problems.append(f"{path}.metadata: must stay a bare object (the server owns ObjectMeta)")
