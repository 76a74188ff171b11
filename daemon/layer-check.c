/* A program that does nothing, for daemon/meson.build's layering check:
 * each stage's library is linked whole into one with only the libraries
 * below it, so a call up into a higher stage is an undefined symbol and
 * the build fails. */
int main(void) {
        return 0;
}
