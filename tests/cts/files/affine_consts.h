/* Included by affine.rk.c: inlined into its text when it is read. */
#pragma once
#define BLOCK 64
#ifndef OFFSET
#define OFFSET 7
#endif
