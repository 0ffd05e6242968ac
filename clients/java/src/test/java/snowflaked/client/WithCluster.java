package snowflaked.client;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** A test class with a real cluster of its own (two daemons), started before its tests. */
abstract class WithCluster {
  static Cluster cluster;

  @BeforeAll
  static void startCluster() throws Exception {
    cluster = new Cluster(false);
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }
}
