# Install rules and the exported CMake package: find_package(ddp) + target_link_libraries(x ddp::ddp).
include(CMakePackageConfigHelpers)

# Components, one per Debian package (cmake/DdpDebian.cmake): runtime = the shared library,
# dev = headers + CMake package + the libddp.so link, tools = ddprun, the trainers, the data tools.
install(TARGETS ddp EXPORT ddpTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/ddp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(EXPORT ddpTargets NAMESPACE ddp:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ddp COMPONENT dev)

configure_package_config_file(cmake/ddpConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/ddpConfig.cmake"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ddp)
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/ddpConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/ddpConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/ddpConfigVersion.cmake"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ddp COMPONENT dev)

include(DdpDebian)
