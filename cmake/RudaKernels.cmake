# ruda_add_kernels(<target> <kernel file>... [INCLUDE_DIRS <dir>...])
#
# Embeds the text of each kernel file (written in ruda/kernel_dialect.h's
# dialect) into <target>: runs the embed step (ruda-kernel-embed) at build
# time and adds the generated C file, which defines ruda_kernel_text__NAME
# for every RUDA_KERNEL in the file. The kernel file itself is compiled by
# the target's own sources that #include it (or list it as a source): that
# is the cpu:N code. The embed step inlines the file's own #include "..."
# headers, searched next to the file and then in INCLUDE_DIRS, and records
# them as dependencies. Every file also joins the RUDA_KERNEL_FILES global
# property, which the kernels_check test compiles for CUDA and OpenCL.
#
# RUDA_KERNEL_EMBED (cache variable) may name an installed ruda-kernel-embed;
# in ruda's own tree the ruda_kernel_embed target is used.
# A function keeps the policies in effect where it is defined. CMP0116 NEW
# makes Ninja read the embed step's depfile, whose target is the output's
# absolute path, as naming that output; a consumer project whose
# cmake_minimum_required predates 3.20 would otherwise leave it OLD, and
# every build would embed the kernels again.
cmake_policy(PUSH)
if(POLICY CMP0116)
  cmake_policy(SET CMP0116 NEW)
endif()
function(ruda_add_kernels target)
  cmake_parse_arguments(RK "" "" "INCLUDE_DIRS" ${ARGN})
  if(TARGET ruda_kernel_embed)
    set(embed $<TARGET_FILE:ruda_kernel_embed>)
    set(embed_dep ruda_kernel_embed)
  elseif(RUDA_KERNEL_EMBED)
    set(embed ${RUDA_KERNEL_EMBED})
    set(embed_dep ${RUDA_KERNEL_EMBED})
  else()
    message(FATAL_ERROR "ruda_add_kernels: no ruda-kernel-embed (set RUDA_KERNEL_EMBED)")
  endif()
  set(inc_args "")
  foreach(d ${RK_INCLUDE_DIRS})
    get_filename_component(dabs ${d} ABSOLUTE)
    list(APPEND inc_args -I ${dabs})
    set_property(GLOBAL APPEND PROPERTY RUDA_KERNEL_INCLUDE_DIRS ${dabs})
  endforeach()
  foreach(f ${RK_UNPARSED_ARGUMENTS})
    get_filename_component(abs ${f} ABSOLUTE)
    file(RELATIVE_PATH rel ${CMAKE_CURRENT_SOURCE_DIR} ${abs})
    string(MAKE_C_IDENTIFIER "${rel}" id)
    set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/ruda_kernels/${target})
    set(out ${out_dir}/${id}_text.c)
    # The embed step writes into out_dir, which no generator is bound to
    # create (Ninja makes an output's folder, Make does not): made here at
    # configure time, and again by the step itself should it be removed.
    file(MAKE_DIRECTORY ${out_dir})
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
      COMMAND ${embed} ${inc_args} -MF ${out}.d -o ${out} ${abs}
      DEPENDS ${abs} ${embed_dep}
      DEPFILE ${out}.d
      COMMENT "Embedding the kernel text of ${rel}"
      VERBATIM)
    target_sources(${target} PRIVATE ${out})
    set_property(GLOBAL APPEND PROPERTY RUDA_KERNEL_FILES ${abs})
  endforeach()
endfunction()
cmake_policy(POP)
