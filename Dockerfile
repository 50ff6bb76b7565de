# syntax=docker/dockerfile:1
# lspd's image. Every version comes from one place:
#   - Debian packages: images/pins.env (the builder runs images/setup.sh itself; the
#     runtime stage installs the same DEB_* pins, derived from the same file, and the
#     IMAGE_DEB_* pins only the image has);
#   - npm packages (the language servers among them): package-lock.json, by `npm ci`;
#   - Node: NODE_VERSION below, which test/ops-pins.test.ts holds equal to pins.env;
#   - servers no Debian package or npm lockfile brings (rust-analyzer, jdtls,
#     ruby-lsp and its gems): a dated release and its published sha256, also in
#     images/pins.env, each in a stage of its own that checks the bytes before use.
#     test/ops-pins.test.ts checks all of this, since docker cannot run on the
#     machines that develop lspd.
# Build:  docker build -t lspd:$(git rev-parse --short HEAD) .

# Keep equal to NODE_VERSION in images/pins.env (a test checks it).
ARG NODE_VERSION=20.20.2

# --- builder: the same set-up as a laptop or CI -----------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS builder
WORKDIR /opt/lspd
# Inputs of the set-up first, so source edits do not re-run apt and npm.
COPY package.json package-lock.json ./
COPY images/ images/
COPY jail/ jail/
# setup.sh: Debian packages at the pins.env versions (and a C compiler), `npm ci
# --ignore-scripts` from the lockfile, and `make -C jail` (the seccomp helper,
# the cgroup gate and the probe). Running the script itself, not a copy of its
# steps, is what keeps the image and a laptop on the same versions.
# --runtime: without the test-only packages (TEST_ONLY_DEB in pins.env).
RUN bash images/setup.sh --runtime \
 # Dev-only packages (type definitions, ajv, yaml) are not shipped; tsx is a runtime dependency.
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src/ src/
COPY bin/ bin/

# --- rust-analyzer: downloaded and verified in a stage of its own -------------
# curl and ca-certificates here are unpinned on purpose: they only carry bytes,
# and the sha256 check below is what decides whether those bytes are accepted.
# None of this stage reaches the runtime image except the checked binary.
FROM node:${NODE_VERSION}-bookworm-slim AS rust-analyzer
COPY images/pins.env /tmp/pins.env
RUN set -eu; . /tmp/pins.env; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends ca-certificates curl; \
    curl -fsSL -o /tmp/rust-analyzer.gz \
      "https://github.com/rust-lang/rust-analyzer/releases/download/${RUST_ANALYZER_VERSION}/rust-analyzer-x86_64-unknown-linux-gnu.gz"; \
    echo "${RUST_ANALYZER_SHA256}  /tmp/rust-analyzer.gz" | sha256sum -c -; \
    gunzip -c /tmp/rust-analyzer.gz > /usr/local/bin/rust-analyzer; \
    chmod 0755 /usr/local/bin/rust-analyzer

# --- jdtls: the dated milestone tarball, verified, unpacked under /usr ---------
# Under /usr/local because the SERVE jail binds /usr and nothing else of the image.
# Only the Linux configuration is kept (read-only there: the row gives jdtls a
# configuration area of its own in the jail's tmp), and launcher.jar names the
# versioned Equinox launcher so the row's argv carries no version.
FROM node:${NODE_VERSION}-bookworm-slim AS jdtls
COPY images/pins.env /tmp/pins.env
RUN set -eu; . /tmp/pins.env; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends ca-certificates curl; \
    curl -fsSL -o /tmp/jdtls.tar.gz \
      "https://download.eclipse.org/jdtls/milestones/${JDTLS_VERSION}/jdt-language-server-${JDTLS_VERSION}-${JDTLS_TIMESTAMP}.tar.gz"; \
    echo "${JDTLS_SHA256}  /tmp/jdtls.tar.gz" | sha256sum -c -; \
    mkdir -p /usr/local/share/jdtls; \
    tar -xzf /tmp/jdtls.tar.gz -C /usr/local/share/jdtls --no-same-owner; \
    cd /usr/local/share/jdtls; \
    rm -rf bin config_mac config_mac_arm config_win config_linux_arm config_ss_*; \
    set -- plugins/org.eclipse.equinox.launcher_[0-9]*.jar; [ "$#" = 1 ]; \
    ln -s "$1" launcher.jar; \
    chmod -R a+rX,go-w /usr/local/share/jdtls

# --- ruby-lsp: each gem downloaded, verified, installed with no resolution -------
# Every gem of ruby-lsp's closure is a RUBY_GEM_* pin (name@version@sha256); `gem
# install --local --ignore-dependencies` installs exactly those files and asks
# rubygems.org nothing. prism and rbs compile their C extensions here, against the
# same Ruby the runtime installs; gcc/make/libc6-dev are unpinned as images/setup.sh's
# are (they build, they are not shipped). The empty Gemfile is what the row names in
# BUNDLE_GEMFILE, so ruby-lsp never composes or installs a bundle from the tree's.
FROM node:${NODE_VERSION}-bookworm-slim AS ruby-lsp
COPY images/pins.env /tmp/pins.env
RUN set -eu; . /tmp/pins.env; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends ca-certificates curl gcc make libc6-dev \
      ruby=${IMAGE_DEB_RUBY} ruby-dev=${BUILD_DEB_RUBY_DEV}; \
    mkdir -p /tmp/gems; \
    for var in $(sed -n 's/^\(RUBY_GEM_[A-Z0-9_]*\)=.*/\1/p' /tmp/pins.env); do \
      eval "pin=\${$var}"; \
      name=${pin%%@*}; rest=${pin#*@}; version=${rest%%@*}; sha=${rest#*@}; \
      curl -fsSL -o "/tmp/gems/${name}-${version}.gem" "https://rubygems.org/gems/${name}-${version}.gem"; \
      echo "${sha}  /tmp/gems/${name}-${version}.gem" | sha256sum -c -; \
    done; \
    gem install --local --ignore-dependencies --no-document \
      --install-dir /usr/local/lib/ruby-lsp --bindir /usr/local/lib/ruby-lsp/bin /tmp/gems/*.gem; \
    echo "# lspd: ruby-lsp runs with this empty Gemfile, never the tree's" > /usr/local/lib/ruby-lsp/Gemfile; \
    chmod -R a+rX,go-w /usr/local/lib/ruby-lsp

# --- runtime ----------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
COPY images/pins.env images/trixie-apt.sh /opt/lspd/images/
# Every DEB_<NAME>=<version> and IMAGE_DEB_<NAME>=<version> of pins.env, installed
# as <name>=<version> (NAME lower-cased, _ as -): the rows images/setup.sh installs,
# so the runtime has bubblewrap, clangd, go, gopls, shellcheck, composer, pip... at
# exactly the pinned versions, and the JDK and Ruby the jdtls and ruby-lsp rows run on.
# Test-only pins (TEST_ONLY_DEB: nginx, which only the tests run) are skipped.
# libseccomp-dev brings libseccomp2, which the jail's filter helper links.
# Go and gopls are Debian 13's: trixie-apt.sh makes it a source for TRIXIE_PACKAGES
# alone, as images/setup.sh does on a host.
RUN set -eu; \
    . /opt/lspd/images/pins.env; \
    sh /opt/lspd/images/trixie-apt.sh /opt/lspd/images/pins.env; \
    pkgs=""; \
    for var in $(sed -n 's/^\(\(IMAGE_\)\{0,1\}DEB_[A-Z0-9_]*\)=.*/\1/p' /opt/lspd/images/pins.env); do \
      case " $TEST_ONLY_DEB " in *" $var "*) continue ;; esac; \
      name=$(echo "${var#IMAGE_}" | sed 's/^DEB_//' | tr 'A-Z_' 'a-z-'); \
      eval "version=\${$var}"; \
      pkgs="$pkgs $name=$version"; \
    done; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends $pkgs; \
    rm -rf /var/lib/apt/lists/*; \
    # The server table and the jail run /usr/bin/node; the node image keeps it in
    # /usr/local/bin. The jail binds all of /usr, so a link inside /usr resolves there too.
    ln -sf /usr/local/bin/node /usr/bin/node
COPY --from=rust-analyzer /usr/local/bin/rust-analyzer /usr/local/bin/rust-analyzer
COPY --from=jdtls /usr/local/share/jdtls/ /usr/local/share/jdtls/
COPY --from=ruby-lsp /usr/local/lib/ruby-lsp/ /usr/local/lib/ruby-lsp/
WORKDIR /opt/lspd
COPY --from=builder /opt/lspd/package.json /opt/lspd/package-lock.json /opt/lspd/tsconfig.json ./
COPY --from=builder /opt/lspd/node_modules/ node_modules/
COPY --from=builder /opt/lspd/jail/build/ jail/build/
COPY --from=builder /opt/lspd/src/ src/
COPY --from=builder /opt/lspd/bin/ bin/
RUN ln -s /opt/lspd/bin/lspd.js /usr/local/bin/lspd

# Configuration is environment (API.md "Running"; every variable in README).
# Off loopback, lspd refuses to start without LSPD_TOKENS: mount a tokens file.
ENV LSPD_LISTEN=0.0.0.0:7420 \
    LSPD_DATA=/var/lib/lspd \
    LOG_LEVEL=info \
    NODE_ENV=production
VOLUME /var/lib/lspd
EXPOSE 7420

# Runs as root, on purpose, and only as root *inside a user namespace*:
# - every jail runs as its own uid from a pool (LSPD_JAIL_UID_BASE..+COUNT), so
#   jails cannot signal, ptrace or starve one another (RLIMIT_NPROC is per uid);
#   starting a process as another uid needs root or CAP_SETUID/CAP_SETGID, and
#   giving a non-root user those capabilities is root by another name;
# - bwrap itself is unprivileged: it needs unprivileged user namespaces (it makes
#   its own), not setuid or CAP_SYS_ADMIN.
# So run this image where uid 0 is not the host's root: Kubernetes with
# `hostUsers: false` (images/k8s/), or docker/podman with user-namespace remapping
# (rootless podman, or dockerd --userns-remap). There, the pool's uids are mapped
# host uids with no privilege at all.
USER root

# No init process is needed as PID 1: lspd waits for its own children, and each
# jail's gate (jail/gate.c) is a subreaper for everything inside it. Node as PID 1
# also lets `kill -HUP 1` reload the tokens file.
HEALTHCHECK --interval=30s --timeout=3s --start-period=30s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:7420/livez').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
# Not `npm start`: its prestart runs the set-up, which is already done in the image.
CMD ["node", "--import", "tsx", "src/main.ts"]
