// PeerDirectory maps the addresses in Gloo's error messages back to ranks. Gloo versions print an
// address differently (Debian 12's Gloo "[127.0.0.1]:41234", later ones may append a sequence
// number), so a rank must be found by Gloo's own text and by the readable host:port alike.
#include <gtest/gtest.h>

#include "ddp/gloo/failure.h"

using ddp::gloo_backend::PeerDirectory;

TEST(PeerDirectory, FindsRankByGlooText) {
  PeerDirectory d;
  d.add(1, "[127.0.0.1]:41234", "127.0.0.1:41234");
  d.add(2, "[127.0.0.1]:41235", "127.0.0.1:41235");
  EXPECT_EQ(d.find_in("Connection closed by peer [127.0.0.1]:41235"), 2);
  EXPECT_EQ(d.find_in("Read error [127.0.0.1]:41234: Connection reset by peer"), 1);
}

TEST(PeerDirectory, FindsRankByReadableAddressWhenGlooPrintsItDifferently) {
  PeerDirectory d;
  d.add(3, "[10.0.0.7]:5000$4", "10.0.0.7:5000");
  EXPECT_EQ(d.find_in("Connection closed by peer [10.0.0.7]:5000"), 3);
  EXPECT_EQ(d.find_in("Read error 10.0.0.7:5000: Connection reset by peer"), 3);
  d.add(4, "", "[::1]:6000");
  EXPECT_EQ(d.find_in("Connection closed by peer [::1]:6000"), 4);
}

TEST(PeerDirectory, PortPrefixIsNotAMatch) {
  PeerDirectory d;
  d.add(1, "[127.0.0.1]:4123", "127.0.0.1:4123");
  EXPECT_EQ(d.find_in("Connection closed by peer [127.0.0.1]:41234"), -1);
  EXPECT_EQ(d.find_in("no address here"), -1);
  EXPECT_EQ(d.readable(1), "127.0.0.1:4123");
  EXPECT_EQ(d.readable(9), "");
}
