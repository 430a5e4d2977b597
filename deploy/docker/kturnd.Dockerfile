# kturnd, the TURN data plane. Build from the repository root:
#   docker build -f deploy/docker/kturnd.Dockerfile -t kturn/kturnd:0.1.0 .
# Run standalone: docker run --network host -v $PWD/stunnerd.conf:/etc/kturn/stunnerd.conf:ro \
#                   kturn/kturnd:0.1.0 -c /etc/kturn/stunnerd.conf
# In Kubernetes the operator runs it from the Dataplane (deploy/helm/kturn).

# The base images are build arguments whose defaults are the real ones, debian:12 and
# gcr.io/distroless/cc-debian12:nonroot; scripts/build-images.sh, which has no registry, passes
# stand-ins it makes from Debian packages (--build-arg BUILD_IMAGE=... RUNTIME_IMAGE=...).
ARG BUILD_IMAGE=debian:12
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

# Build stage: Debian 12 with the packages of `scripts/install-deps.sh --build` (no
# test, benchmark or interop packages), then the three binaries. It is the same in the three
# Dockerfiles up to the last RUN, so a builder with a layer cache (buildah --layers, BuildKit)
# compiles once for all three images: the binaries share most of their libraries, and one
# target alone takes nearly as long as all three.
FROM ${BUILD_IMAGE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libssl-dev libboost1.81-dev libboost-system1.81-dev nlohmann-json3-dev libyaml-cpp-dev \
      libspdlog-dev libfmt-dev libcli11-dev zlib1g-dev \
      clang libbpf-dev bpftool \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY include/ include/
COPY src/ src/
COPY bpf/ bpf/
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DKTURN_BUILD_TESTS=OFF -DKTURN_BUILD_BENCH=OFF \
 && cmake --build build --target kturnd kturn-operator kturn-auth
COPY deploy/docker/stage-runtime.sh /usr/local/bin/
RUN sh /usr/local/bin/stage-runtime.sh build/kturnd /rootfs

# Runtime: distroless (no shell, no package manager) with glibc, libstdc++ and OpenSSL 3; the
# other shared libraries come from the build stage (stage-runtime.sh says which, and why not
# debian:12-slim). Its :nonroot tag already runs as 65532; USER says so here too, numerically,
# so that Kubernetes' runAsNonRoot can verify it.
#
# No file capability (setcap) on kturnd: binding a port below 1024 is left to the pod (the
# chart's default Dataplane sets the sysctl net.ipv4.ip_unprivileged_port_start=0 and adds
# NET_BIND_SERVICE for a root kturnd). A file capability would do nothing under the
# allowPrivilegeEscalation: false the chart sets (no_new_privs disables file capabilities), and
# would make exec fail with EPERM in any container whose capability set lacks NET_BIND_SERVICE.
FROM ${RUNTIME_IMAGE}
COPY --from=build /rootfs/ /
USER 65532:65532
# TURN (UDP and TCP; the listeners come from the config), metrics, health.
EXPOSE 3478/udp 3478/tcp 8080/tcp 8086/tcp
ENTRYPOINT ["/usr/local/bin/kturnd"]
