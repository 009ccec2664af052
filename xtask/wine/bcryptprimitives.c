/* ProcessPrng for Wine 8, which lacks bcryptprimitives.dll.
 *
 * Rust's std (1.78 and later) draws its random seeds from ProcessPrng in
 * bcryptprimitives.dll, present since Windows 10. Debian's Wine 8 has no
 * such DLL, so every Rust test binary fails to start under it. `cargo xtask
 * cross` builds this DLL with mingw and puts it in its own Wine prefix:
 * ProcessPrng fills the buffer from RtlGenRandom (advapi32's
 * SystemFunction036), which Wine has. Real Windows never sees this file. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, n)) {
            return FALSE;
        }
        data += n;
        len -= n;
    }
    return TRUE;
}
