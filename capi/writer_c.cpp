#include "capi_internal.h"
