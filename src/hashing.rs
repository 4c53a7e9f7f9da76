//! Hash tables for keys that come from a table's log or listing (paths,
//! often millions): hashbrown's table with foldhash at a fixed seed, which
//! hashes a short string several times faster than the standard library's
//! SipHash. A fixed seed keeps the core free of random or global state;
//! the planner never depends on a table's iteration order, and a log
//! forged so that its paths collide can only slow a plan, never change it.

/// The hasher: foldhash's fast variant, seeded by a constant.
pub(crate) type FixedHash = foldhash::fast::FixedState;

/// A hash map keyed by paths (see the module).
pub(crate) type Map<K, V> = hashbrown::HashMap<K, V, FixedHash>;

/// A hash set of paths (see the module).
pub(crate) type Set<K> = hashbrown::HashSet<K, FixedHash>;
