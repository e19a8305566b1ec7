/* cpu_features.h — what this CPU's instruction set offers half precision,
 * read once with cpuid, in one place for every CPU kernel and the BLAS
 * loader. The types and queries are public (kernels/host.h: the programs'
 * CSV metadata reads them too); cpu_features.c defines them. */
#ifndef HL_CPU_FEATURES_H
#define HL_CPU_FEATURES_H

#include "kernels/host.h" /* hl_cpu_features, hl_cpu_units and their queries */

#endif
