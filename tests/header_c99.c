/* The public header alone, compiled as strict C99 (-std=c99 -Wall -Wextra
   -pedantic -Werror): it must need nothing else and warn about nothing. */
#include <ztensor.h>

/* Use a few declarations so that the header's types are exercised. */
int zt_header_c99_check(void);
int zt_header_c99_check(void) {
  zt_open_options opt;
  zt_writer_options wopt;
  zt_status s = ZT_OK;
  zt_io_mode mode = ZT_IO_COPY;
  zt_digest_algo algo = ZT_DIGEST_XXH3;
  (void)opt;
  (void)wopt;
  return (int)s + (int)mode + (int)algo + ZT_VERSION_NUMBER;
}
