# kturn-operator, the control plane. Build from the repository root:
#   docker build -f deploy/docker/kturn-operator.Dockerfile -t kturn/kturn-operator:0.1.0 .
# In Kubernetes: deploy/helm/kturn (or deploy/manifests/kturn.yaml).

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
RUN sh /usr/local/bin/stage-runtime.sh build/kturn-operator /rootfs

# Runtime: distroless (no shell, no package manager) with glibc, libstdc++ and OpenSSL 3; the
# other shared libraries come from the build stage (stage-runtime.sh says which, and why not
# debian:12-slim). Its :nonroot tag already runs as 65532; USER says so here too, numerically,
# so that Kubernetes' runAsNonRoot can verify it. The operator binds only the CDS port (13478)
# and needs no capability. The CA it trusts is the service account's ca.crt, not the image's.
FROM ${RUNTIME_IMAGE}
COPY --from=build /rootfs/ /
USER 65532:65532
# Config discovery (CDS).
EXPOSE 13478/tcp 8080/tcp 8081/tcp
ENTRYPOINT ["/usr/local/bin/kturn-operator"]
