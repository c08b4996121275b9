// PostgresStore: the order store on PostgreSQL (DESIGN §12), the second engine behind the store's
// capabilities (`JobJournal`, `JobApplier`, `OrderReader`, `ChangeFeedSource`). One database holds
// many accounts: every row carries its account and every statement names it. Several agents may
// share an account: every journal write takes the account's journal lock for its transaction, so
// job ids commit in id order and the serial executor never skips a job that commits later; every
// apply checks the fencing epoch when the agent leads (``PostgresLeadership``).
