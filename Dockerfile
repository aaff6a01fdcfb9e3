# The Hoist controller image. Build it with `npm run image` (scripts/image.sh): that stages the
# build context — a root file system with Node 24, helm, kustomize, git and the shared libraries they link,
# the compiled controller and its production dependencies — and runs `podman build` on this file.
# No base image: nothing is pulled, and the image holds no shell and no package manager.
FROM scratch
COPY rootfs/ /
# the only writable paths; the chart mounts emptyDirs here, the root file system stays read-only
COPY --chown=65532:65532 cache/ /var/cache/hoist/
COPY --chown=65532:65532 tmp/ /tmp/
# MALLOC_ARENA_MAX: glibc's malloc makes an arena per thread; libuv's pool threads (gunzip of
# content, gzip of revisions) each grew one (bench/scale.ts, N=1000: peak 143 -> 124 MiB)
ENV PATH=/usr/local/bin:/usr/bin \
    NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    HOIST_HELM=/usr/local/bin/helm \
    HOIST_KUSTOMIZE=/usr/local/bin/kustomize \
    HOIST_CACHE=/var/cache/hoist \
    HOME=/tmp
USER 65532:65532
WORKDIR /app
# node is PID 1 and handles SIGTERM itself (graceful drain, Lease release). A 2 MiB young
# generation (V8's default grows to 16 MiB semi-spaces): a controller's garbage is short-lived
# request and render data, and the larger nursery only raised peak RSS (bench/scale.ts, N=100:
# peak 186 -> 129 MiB, CPU no higher). --optimize-for-size: V8 otherwise grows the old
# generation up to 4x what survives a GC; at N=1000 the heap held 36 MiB live in a 116 MiB heap
# (peak RSS 229 -> 143 MiB, controller CPU about 25% higher). --heap-growing-percent=40: with
# --optimize-for-size alone the old generation grew so little past what survived that a wave ran
# a major GC every 0.7 s; 1.4x runs fewer (bench/scale.ts, N=10000: V8's GC threads 38 -> 22 %
# of the controller's CPU, peak RSS 284 -> 292 MiB; docs/benchmarks.md). test/support/as-deployed.ts reads
# the flags from this line and MALLOC_ARENA_MAX from the ENV above: bench/scale.ts,
# bench/isolation.ts and test/e2e/isolation.test.ts run the controller with them.
ENTRYPOINT ["/usr/local/bin/node", "--max-semi-space-size=2", "--optimize-for-size", "--heap-growing-percent=40", "/app/dist/src/cli/main.js"]
CMD ["run"]
