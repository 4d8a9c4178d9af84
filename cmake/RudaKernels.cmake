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
    set(out ${CMAKE_CURRENT_BINARY_DIR}/ruda_kernels/${target}/${id}_text.c)
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${embed} ${inc_args} -MF ${out}.d -o ${out} ${abs}
      DEPENDS ${abs} ${embed_dep}
      DEPFILE ${out}.d
      COMMENT "Embedding the kernel text of ${rel}"
      VERBATIM)
    target_sources(${target} PRIVATE ${out})
    set_property(GLOBAL APPEND PROPERTY RUDA_KERNEL_FILES ${abs})
  endforeach()
endfunction()
