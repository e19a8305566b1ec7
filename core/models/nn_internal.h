/* nn_internal.h — what the nn_*.c files share: building a parameter list. */
#ifndef HL_NN_INTERNAL_H
#define HL_NN_INTERNAL_H

#include "core/models/nn.h"

/* Appends a parameter of `shape` with the dtype the list's policy gives
 * `role` (int8 weights also get their [rows] fp32 scale). Parameters
 * require grad, except under the int8 policy (inference storage). Values
 * are not set (hl_params_init does that). */
bool hl_params_add(hl_param_list *l, const char *name, hl_shape shape, hl_param_role role, int block,
                   hl_init_spec init);
/* Releases every tensor and the list's memory. */
void hl_params_clear(hl_param_list *l);

#endif
