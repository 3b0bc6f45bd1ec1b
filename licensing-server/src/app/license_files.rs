//! (ext) License files (protocol.md section 6): a license's data signed with the team's active
//! Ed25519 key and, by default, encrypted under its license key (and machine), for applications
//! that run offline. Issued here for the developer API and the dashboard; the client API's
//! checkout issues one for the machine that asks (both through [`certificate`]).

pub(crate) use licensing_core::operations::licenses::IssueLicenseFile;

use licensing_core::api::LicenseFileIssued;
use licensing_core::model::{Action, License, Resource, Scope};
use licensing_core::store::AuditStore;
use licensing_core::validate::HardwareId;
use licensing_core::{ApiError, LicenseId, LicenseKey, ProductId, Timestamp};
use serde::Serialize;

use super::client::{certificate, steps};
use super::{Cx, Run};

/// What the audit log and the `license.file_issued` event say of an issued file.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileIssued<'a> {
    license_id: LicenseId,
    license_key: &'a LicenseKey,
    product_ids: &'a [ProductId],
    hardware_identifier: Option<&'a str>,
    expires_at: Option<Timestamp>,
    encrypted: bool,
}

impl Run for IssueLicenseFile {
    async fn run(self, cx: &Cx) -> Result<LicenseFileIssued, ApiError> {
        let request = self.1.validate()?;
        let stored = cx.write::<License>(self.0).await?;
        let state = &cx.state;
        let context = super::client::team_context(state, cx.team).await?;
        // The terms in effect: its policy's, live.
        let license = context.policies.effective(&stored).into_owned();
        let grace_days = context.policies.grace_days(&stored);
        // A file of a license its application would be refused: the client API's refusal.
        licensing_core::verify::standing(&license, grace_days, cx.now)?;
        let granted = steps::granted(&state.store, &context, &license).await?;
        let mut data =
            steps::verify_data(&state.store, &license, granted.products, None, None, None).await?;
        data.license.entitlements = granted.codes;
        data.license.grace_until =
            licensing_core::verify::grace_until(&license, grace_days, cx.now);
        // Without a ttl of its own, the file lives as long as its policy says (if it says).
        let ttl = request.ttl.or_else(|| {
            context
                .policies
                .of(&stored)
                .and_then(|p| p.license_file_ttl)
        });
        if !cx.caller.allows(Scope::read(Resource::Customers)) {
            // Who the customers are is for callers that may read customers.
            data.customers.clear();
        }
        let machine = request.hardware_id.as_ref();
        let (certificate, payload) = certificate(
            &context,
            &license,
            data,
            machine,
            (ttl, None),
            request.encrypt,
            cx.now,
        )?;
        let record = FileIssued {
            license_id: license.id,
            license_key: &license.license_key,
            product_ids: &license.product_ids,
            hardware_identifier: machine.map(HardwareId::as_str),
            expires_at: payload.meta.expiry,
            encrypted: request.encrypt,
        };
        let journal = cx.change(Action::LicenseFileIssued, license.id, None, Some(&record));
        state.store.record_journal(&journal).await?;
        Ok(LicenseFileIssued {
            certificate,
            issued_at: payload.meta.issued,
            expires_at: payload.meta.expiry,
            hardware_identifier: payload.meta.hardware_identifier,
        })
    }
}
