/* HotSpot discovery: a placeholder until the walker's branch (hswalk) brings the real one. */
#include "hotspot.h"

/* Finds nothing: no process is handed over to a HotSpot walker, so no
 * HotSpot pseudo-frame is made and the namers are not called in the
 * daemon; their tests call them directly. */
int hotspot_discover(Elf *elf, const struct file_key *key, struct unwind_runtime_found *ret) {
        (void) elf;
        (void) key;
        (void) ret;
        return 0;
}
