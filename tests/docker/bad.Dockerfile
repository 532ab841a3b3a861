# A Dockerfile with three mistakes docker/chroot_build.py lint must report (tests/docker/CMakeLists.txt):
# a COPY of a file that does not exist, a COPY of something .dockerignore excludes, a final stage as root.
FROM debian:bookworm-20251229 AS build
COPY does-not-exist.txt /tmp/
COPY .git /tmp/git
FROM debian:bookworm-20251229 AS runtime
COPY --from=build /tmp /tmp
ENTRYPOINT ["/bin/true"]
