// TestKit: the small layer of the test kit. Clocks and randomness the tests drive (`ManualClock`,
// `WallClock`, `SplitMix`), logs captured with swift-log's `InMemoryLogHandler` so tests assert a
// message and its metadata and search everything for secrets, `quietLogger`, and helpers for child
// processes and their log lines whose every wait has a deadline. It links no server and no store;
// the harnesses that do are `TestHarnesses`. Linked by tests only, never by a product.
