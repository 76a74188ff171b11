/* Kept so that code written before common/protocol.h (client/fleet.c)
 * still builds: the stack-line encoder now lives in common/protocol.[ch].
 * Include "protocol.h" instead; this header goes when nothing includes it. */
#pragma once

#include "protocol.h"
