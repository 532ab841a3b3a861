# Bash completion for the installed binaries: one script (tools/bash_completion/ddp.bash) that reads
# a command's options from its --help, copied once per command name, because bash-completion loads
# share/bash-completion/completions/<command> the first time <command> is completed.
#
#   ddp_add_bash_completion(ddprun)
#
# also puts the copy in <build>/bash-completion/completions/ddprun, to source from a build tree.
set(DDP_COMPLETION_SCRIPT "${PROJECT_SOURCE_DIR}/tools/bash_completion/ddp.bash")
set(DDP_COMPLETION_DIR "${CMAKE_BINARY_DIR}/bash-completion/completions" CACHE INTERNAL
    "where the build tree's completion files go")

function(ddp_add_bash_completion target)
  configure_file("${DDP_COMPLETION_SCRIPT}" "${DDP_COMPLETION_DIR}/${target}" COPYONLY)
  install(FILES "${DDP_COMPLETION_DIR}/${target}"
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT tools)
endfunction()
