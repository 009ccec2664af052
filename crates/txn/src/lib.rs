//! Transactions over a lithify database.

mod error;
mod indexed_batch;
mod iter;
mod lock_table;
mod optimistic;
mod pessimistic;
mod tracker;
mod transaction;

pub use error::{Error, Result};
pub use indexed_batch::{BatchLookup, WriteBatchWithIndex};
pub use iter::BaseDeltaIterator;
pub use optimistic::{OptimisticDb, OptimisticTransactionOptions};
pub use pessimistic::{TransactionDb, TransactionDbOptions, TransactionOptions};
pub use transaction::{DEFAULT_LOCK_TIMEOUT, Transaction, TxnIterator};
