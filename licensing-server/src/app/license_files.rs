//! (ext) License files (protocol.md section 6): a license's data signed with the team's active
//! Ed25519 key and, by default, encrypted under its license key (and machine), for applications
//! that run offline. Issued here for the developer API and the dashboard; the client API's
//! checkout issues one for the machine that asks (both through [`certificate`]).

pub(crate) use licensing_core::operations::licenses::IssueLicenseFile;

use licensing_core::api::LicenseFileIssued;
use licensing_core::model::{Action, License, Resource, Scope};
use licensing_core::store::{ActivityStore, AuditStore};
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
    /// The machine's record was made by this file (it had none).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    device_recorded: bool,
    /// The machine passed the license's device limit because the vendor said to.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    device_limit_overridden: bool,
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
        // The meters' standing at issue time.
        data.license.meters =
            super::client::usage::meters_now(&state.store, &license, cx.now).await?;
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
        // A machine the file is bound to is recorded as a checkout's is: it counts against the
        // device limit, which it passes only when the vendor overrides it.
        let registered = match machine {
            None => None,
            Some(h) => {
                let rules = licensing_core::store::ActivityRules {
                    settings: &context.team.settings,
                    max_records: state.max_records,
                    events: context.client_events,
                    policies: &context.policies,
                };
                let registered = state
                    .store
                    .register_device(
                        cx.team,
                        license.id,
                        &rules,
                        h,
                        request.override_device_limit,
                        cx.now,
                    )
                    .await?
                    .map_err(ApiError::from)?;
                Some(registered)
            }
        };
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
            device_recorded: registered.as_ref().is_some_and(|r| r.created),
            device_limit_overridden: registered.as_ref().is_some_and(|r| r.overrode),
        };
        let journal = cx.change(Action::LicenseFileIssued, license.id, None, Some(&record));
        state.store.record_journal(&journal).await?;
        Ok(LicenseFileIssued {
            certificate,
            issued_at: payload.meta.issued,
            expires_at: payload.meta.expiry,
            hardware_identifier: payload.meta.hardware_identifier,
            device_limit_overridden: record.device_limit_overridden,
        })
    }
}
