/* device.h — choosing a backend and describing the device it runs on. */
#ifndef HL_DEVICE_H
#define HL_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The backend for a device kind, or NULL where it was not built. The
 * backends are registered in kernels/meson.build (one line each). */
const hl_backend *hl_backend_for(hl_device_kind kind);

/* Is the device usable? If not, `why` says why ("not built with CUDA", "no
 * CUDA device or driver found", "driver older than the runtime"...). */
bool hl_device_available(hl_device_kind kind, char *why, size_t len);

/* Resolve a --device request ("auto", "cpu", "cuda", "gpu"). auto takes the
 * first usable accelerator (CUDA), else the CPU, with the reason the first
 * accelerator is not usable in
 * `err` (empty otherwise); the caller decides whether and when to say so.
 * Returns false with a message in `err` when the request is malformed (exit 2)
 * or asks for a device that is not usable (exit 1: *unusable set). */
bool hl_device_resolve(const char *request, hl_device_kind *out, bool *unusable, char *err, size_t len);

/* "cpu", "cuda": the backend's name, also its --device word */
const char *hl_device_kind_name(hl_device_kind kind);
/* "CPU", "CUDA": the backend's word in messages */
const char *hl_device_kind_label(hl_device_kind kind);

/* Facts, cached after the first query except free memory. */
const hl_device_facts *hl_device_facts_get(hl_device_kind kind);

/* Machine slug for results/<machine>/: "nvidia-h200", "cpu-amd-epyc-9654-96-core",
 * or, where the CPU's name has no digit (a VM's "AMD EPYC"), with cpuid's family
 * and model: "cpu-amd-epyc-family-26-model-2". */
const char *hl_device_slug(hl_device_kind kind);
/* The same rule for a given name and model id (hl_device_facts.model_id) */
void hl_device_slug_of(hl_device_kind kind, const char *name, const char *model_id, char *out, size_t len);

/* One line describing the device for CSV metadata and program headers. */
const char *hl_device_describe(hl_device_kind kind);

#ifdef __cplusplus
}
#endif

#endif
