//! `GET {dev}/statistics`.

use super::{Dev, Input};
use crate::http::{Handled, store_error, success};

pub(super) async fn statistics(dev: Dev, (): (), _: Input) -> Handled {
    let state = &dev.state;
    let stats = state
        .stats
        .get(&state.store, &state.usage, dev.team, dev.now)
        .await
        .map_err(store_error)?;
    Ok(success(200, &*stats, "Statistics retrieved"))
}
