// placeholder
#include "writer.h"
