// TestSupport: the test kit. Harnesses that start real servers on 127.0.0.1 (the push listener, the
// orders API, the Sandbox, a throwaway PostgreSQL cluster, headless Chromium) over a real store in a
// temporary directory; clocks and randomness the tests drive; logs captured to be searched for
// secrets. It is linked by tests only, never by a product.
