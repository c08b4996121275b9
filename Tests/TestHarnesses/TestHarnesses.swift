// TestHarnesses: the large layer of the test kit. Harnesses that start real servers on 127.0.0.1
// (the push listener, the orders API, the Sandbox, a throwaway PostgreSQL cluster, headless Chromium,
// a TCP proxy that partitions an agent from its database)
// over a real store in a temporary directory, and sessions signed in to the Sandbox. Built on
// `TestKit`. Linked by tests only, never by a product.
