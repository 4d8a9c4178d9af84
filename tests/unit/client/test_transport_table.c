/* ruda_transport_table(): the shared MPI transport's door into libruda
 * (ruda/transport.h). A table only for this version and this table size;
 * NULL otherwise, so that a libruda_mpi.so of another version stops with
 * a message instead of calling through a table of another layout. */
#include "client/transport_table.h"
#include "ruda/transport.h"
#include "ruda/version.h"
#include "test.h"

TEST(table_for_this_version_and_size) {
  const ruda__transport_table_t *t =
      ruda_transport_table(RUDA_VERSION_NUMBER, sizeof(ruda__transport_table_t));
  ASSERT_NOT_NULL(t);
  ASSERT_UEQ(t->version, RUDA_VERSION_NUMBER);
  ASSERT_UEQ(t->size, sizeof(ruda__transport_table_t));
  ASSERT_TRUE(t->client_collective_queue == ruda__client_collective_queue);
  ASSERT_TRUE(t->now_ns == ruda__now_ns);
}

TEST(no_table_for_another_version_or_size) {
  ASSERT_TRUE(ruda_transport_table(RUDA_VERSION_NUMBER + 1, sizeof(ruda__transport_table_t)) ==
              NULL);
  ASSERT_TRUE(ruda_transport_table(RUDA_VERSION_NUMBER, sizeof(ruda__transport_table_t) - 8) ==
              NULL);
  ASSERT_TRUE(ruda_transport_table(0, 0) == NULL);
}
