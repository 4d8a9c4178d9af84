# Installation rules, included at the end of the top-level CMakeLists.txt
# once every target exists.
#
#   include/ruda/*.h                        the public headers
#   lib/libruda.so.X.Y.Z, libruda.a         shared and static library
#   bin/ruda                                the command (tools/CMakeLists.txt)
#   bin/ruda-kernel-embed                   the embed step of portable kernels
#   lib/cmake/ruda/RudaKernels.cmake        ruda_add_kernels() for consumers
#   lib/cmake/ruda/ruda-config.cmake ...    find_package(ruda [COMPONENTS MPI])
#   lib/pkgconfig/ruda.pc                   pkg-config --cflags --libs ruda
#   lib/libruda_mpi.so, libruda_mpi.a       the MPI transport, when built
#   lib/pkgconfig/ruda_mpi.pc               pkg-config --cflags --libs ruda_mpi
#
# The MPI transport is an optional component: when the tree defines a
# target named ruda_mpi, it is installed with its own export set and
# find_package(ruda COMPONENTS MPI) gives ruda::ruda_mpi.
include(CMakePackageConfigHelpers)

set(RUDA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ruda)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ruda
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT ruda_development
        FILES_MATCHING PATTERN "*.h" PATTERN "LICENSE")
install(TARGETS ruda ruda_static EXPORT ruda-targets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ruda_runtime
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ruda_runtime
                NAMELINK_COMPONENT ruda_development
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ruda_development
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT ruda-targets NAMESPACE ruda:: DESTINATION ${RUDA_CMAKE_DIR}
        FILE ruda-targets.cmake COMPONENT ruda_development)

# The embed step and its CMake function, so that a consumer's
# ruda_add_kernels() works from the installed tree.
if(TARGET ruda_kernel_embed)
  install(TARGETS ruda_kernel_embed RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          COMPONENT ruda_development)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/cmake/RudaKernels.cmake
        DESTINATION ${RUDA_CMAKE_DIR} COMPONENT ruda_development)

set(RUDA_COMPONENTS "")
if(TARGET ruda_mpi)
  list(APPEND RUDA_COMPONENTS MPI)
  install(TARGETS ruda_mpi ruda_mpi_shared EXPORT ruda-mpi-targets
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ruda_runtime
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ruda_runtime
                  NAMELINK_COMPONENT ruda_development
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ruda_development
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT ruda-mpi-targets NAMESPACE ruda:: DESTINATION ${RUDA_CMAKE_DIR}
          FILE ruda-mpi-targets.cmake COMPONENT ruda_development)
endif()

# 0.x: only the same minor version is compatible (see ruda/version.h).
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(ruda_compat SameMinorVersion)
else()
  set(ruda_compat SameMajorVersion)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ruda-config.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/ruda-config.cmake INSTALL_DESTINATION ${RUDA_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/ruda-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${ruda_compat})
install(FILES ${PROJECT_BINARY_DIR}/cmake/ruda-config.cmake
              ${PROJECT_BINARY_DIR}/cmake/ruda-config-version.cmake
        DESTINATION ${RUDA_CMAKE_DIR} COMPONENT ruda_development)

# ruda.pc finds the prefix from its own location, so the installed tree can
# be moved (and `cmake --install --prefix DIR` needs nothing else).
set(ruda_pc_up "")
string(REPLACE "/" ";" ruda_pc_parts "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
foreach(part ${ruda_pc_parts})
  string(APPEND ruda_pc_up "/..")
endforeach()
set(RUDA_PC_PREFIX "\${pcfiledir}${ruda_pc_up}")
set(RUDA_PC_LIBS_PRIVATE "-pthread")
foreach(lib ${CMAKE_DL_LIBS} m)
  string(APPEND RUDA_PC_LIBS_PRIVATE " -l${lib}")
endforeach()
# hwloc as a library, not as `Requires.private: hwloc`: with --static that
# would bring hwloc's own private libraries (-ludev on Debian, which ships
# no libudev.so for linking without libudev-dev), and a static libruda.a
# links with the shared libhwloc.so like any program does.
if(RUDA_HAVE_HWLOC)
  string(APPEND RUDA_PC_LIBS_PRIVATE " -lhwloc")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/ruda.pc.in ${PROJECT_BINARY_DIR}/ruda.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ruda.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT ruda_development)
if(TARGET ruda_mpi_shared)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/ruda_mpi.pc.in ${PROJECT_BINARY_DIR}/ruda_mpi.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/ruda_mpi.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT ruda_development)
endif()
