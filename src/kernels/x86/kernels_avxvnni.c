/* kernels_avxvnni.c — the "avxvnni" table: kernels_avx2.c compiled again with AVX-VNNI (-mavxvnni), for
 * CPUs that have the VEX vpdpbusd but not AVX-512 (kernels.c checks cpuid leaf 7.1 before handing it
 * out). Only the packed 32-element kernel uses it; it gives the bits of the other x86 tables. */
#define KN_AVXVNNI 1
#include "kernels_avx2.c"
