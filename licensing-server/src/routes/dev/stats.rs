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
    if let Some(allowed) = dev.products() {
        // The figures are the team's, governed by the scope; the products named are the key's.
        let mut own = (*stats).clone();
        own.top_products.retain(|p| allowed.contains(&p.id));
        return Ok(success(200, own, "Statistics retrieved"));
    }
    Ok(success(200, &*stats, "Statistics retrieved"))
}
