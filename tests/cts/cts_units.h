/* Units per ruda of the conformance suite's kernels (shared by the kernel
 * file and the tests). */
#ifndef RUDA_CTS_UNITS_H
#define RUDA_CTS_UNITS_H

#define CTS_UNITS 64

#endif
