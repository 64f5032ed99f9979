/* kernels_neondot.c — the "neondot" table: kernels_neon.c compiled again with the ARMv8.2 dot product
 * extension (-march=armv8.2-a+dotprod), for cores that have sdot (kernels.c checks HWCAP_ASIMDDP before
 * handing it out). Only the integer dot products of the block kernels differ. */
#define KN_NEON_DOT 1
#include "kernels_neon.c"
