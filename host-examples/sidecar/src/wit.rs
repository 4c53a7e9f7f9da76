//! The planner component's interface (`wit/lakesweep.wit`), as wasmtime
//! generates it: the exports the loader calls and the types every layer
//! speaks (`wt`). Generated, so it depends on nothing of this crate.

wasmtime::component::bindgen!({ path: "../../wit", world: "lakesweep" });

/// The interface's types (`lakesweep:planner/types`).
pub use lakesweep::planner::types as wt;
