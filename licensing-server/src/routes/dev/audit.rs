//! (ext) The audit log: who changed what, newest first.

use licensing_core::api::AuditPage;
use licensing_core::api::requests::AuditQuery;
use licensing_core::store::AuditStore;

use super::{Dev, Input};
use crate::http::{Handled, store_error, success};

/// The entries a key may see: those about other products left out (by the store, so that
/// pages and counts are right), and the values of records it may not read withheld.
pub(super) async fn list(dev: Dev, (): (), input: Input) -> Handled {
    let mut query = AuditQuery::parse(&input.query)?;
    query.products = dev.products().clone();
    let found = dev
        .state
        .store
        .list_audit(dev.team, &query)
        .await
        .map_err(store_error)?;
    let entries = found
        .items
        .into_iter()
        .filter_map(|e| e.seen_by(&dev.caller.scopes, &dev.caller.product_ids))
        .collect();
    Ok(success(
        200,
        AuditPage {
            entries,
            total_results: found.total,
            has_next_page: found.has_next_page,
        },
        "Audit log retrieved",
    ))
}
