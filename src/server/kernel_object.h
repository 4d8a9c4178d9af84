/* Internal layout of ruda_kernel_t (src/server/kernel_object.c). */
#ifndef RUDA_SERVER_KERNEL_OBJECT_H
#define RUDA_SERVER_KERNEL_OBJECT_H

#include <stdatomic.h>

#include "ruda/kernel.h"

struct ruda_kernel {
  atomic_uint refs;
  ruda_kernel_desc_t desc; /* strings below are owned copies */
  ruda_hash128_t hash;
  char **options;          /* owned copies of desc.compile_options */
};

#endif
