# Run by cpack before it packs (CPACK_PRE_BUILD_SCRIPTS, cmake/DdpDebian.cmake): every library the
# packaged files need must come from Debian or from these packages (packaging/check-debian-deps.sh).
execute_process(COMMAND bash "${CPACK_DDP_SOURCE_DIR}/packaging/check-debian-deps.sh" "${CPACK_TEMPORARY_DIRECTORY}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ddp: not packaging: a packaged file needs a library outside Debian (above)")
endif()
