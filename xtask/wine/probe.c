/* Exits 0: `cargo xtask cross` starts it under Wine to learn whether Wine
 * can start a Windows program on this machine at all. */
int main(void) { return 0; }
