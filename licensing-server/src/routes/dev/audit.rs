//! (ext) The audit log: who changed what, newest first.

use licensing_core::api::AuditPage;
use licensing_core::api::requests::AuditQuery;
use licensing_core::store::AuditStore;

use super::{Dev, Input};
use crate::http::{Handled, store_error, success};

pub(super) async fn list(dev: Dev, (): (), input: Input) -> Handled {
    let query = AuditQuery::parse(&input.query)?;
    let found = dev
        .state
        .store
        .list_audit(dev.team, &query)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        AuditPage {
            entries: found.items,
            total_results: found.total,
            has_next_page: found.has_next_page,
        },
        "Audit log retrieved",
    ))
}
