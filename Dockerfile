# The Hoist controller image. Build it with `npm run image` (scripts/image.sh): that stages the
# build context — a root file system with Node 24, helm, git and the shared libraries they link,
# the compiled controller and its production dependencies — and runs `podman build` on this file.
# No base image: nothing is pulled, and the image holds no shell and no package manager.
FROM scratch
COPY rootfs/ /
# the only writable paths; the chart mounts emptyDirs here, the root file system stays read-only
COPY --chown=65532:65532 cache/ /var/cache/hoist/
COPY --chown=65532:65532 tmp/ /tmp/
ENV PATH=/usr/local/bin:/usr/bin \
    NODE_ENV=production \
    HOIST_HELM=/usr/local/bin/helm \
    HOIST_CACHE=/var/cache/hoist \
    HOME=/tmp
USER 65532:65532
WORKDIR /app
# node is PID 1 and handles SIGTERM itself (graceful drain, Lease release)
ENTRYPOINT ["/usr/local/bin/node", "/app/dist/src/cli/main.js"]
CMD ["run"]
