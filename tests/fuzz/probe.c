/* Configure-time probe: links only if clang has the libFuzzer and sanitizer
 * runtimes the fuzz targets need. */
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        return 0;
}
