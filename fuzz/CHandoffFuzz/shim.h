// Why a C module: libFuzzer's driver is a C function with no header of its own on Debian. The fuzz
// harness (`fuzz/Harness`) has a `main` of its own (SwiftPM gives every executable one), so when
// it is built with -sanitize=fuzzer it hands control to libFuzzer through this entry point, which
// libFuzzer provides for exactly that (LLVM's libFuzzer documentation, "Using libFuzzer as a
// library").
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
