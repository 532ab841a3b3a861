# Man pages for the installed binaries, made by help2man from each binary's own --help and
# --version, so a page never disagrees with the flags it documents (Debian: apt-get install help2man).
#
#   ddp_add_man_page(ddprun "start and watch the workers of a distributed job, like torchrun")
#
# builds <build>/man/man1/ddprun.1 (and the .1.gz that is installed, as Debian ships man pages) with
# the default target, and installs it with the binary's extras (component tools). Without help2man
# the binaries build and install without pages.
find_program(DDP_HELP2MAN help2man)
find_program(DDP_GZIP gzip)
if(NOT DDP_HELP2MAN OR NOT DDP_GZIP)
  message(STATUS "ddp: man pages skipped (no help2man or gzip; Debian: apt-get install help2man)")
endif()
set(DDP_MAN_DIR "${CMAKE_BINARY_DIR}/man/man1" CACHE INTERNAL "where the built man pages go")

function(ddp_add_man_page target description)
  if(NOT DDP_HELP2MAN OR NOT DDP_GZIP)
    return()
  endif()
  set(page "${DDP_MAN_DIR}/${target}.1")
  # --no-info: there is no Texinfo manual to point to. --no-discard-stderr: a --help that went to
  # stderr is still read. gzip -n: no name or time stamp, so the same page compresses to the same bytes.
  add_custom_command(OUTPUT "${page}" "${page}.gz"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${DDP_MAN_DIR}"
    COMMAND ${DDP_HELP2MAN} --no-info --no-discard-stderr "--name=${description}" "--output=${page}"
            "$<TARGET_FILE:${target}>"
    COMMAND ${DDP_GZIP} -n -9 -k -f "${page}"
    DEPENDS ${target}
    COMMENT "help2man: ${target}.1"
    VERBATIM)
  add_custom_target(${target}_man_page ALL DEPENDS "${page}" "${page}.gz")
  install(FILES "${page}.gz" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools OPTIONAL)
endfunction()
