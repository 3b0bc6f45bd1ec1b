//! [`DevClient`]'s named calls: each is [`DevClient::perform`] of one declared operation with
//! its arguments (and the `all_*` helpers walk every page of a list).

use licensing_core::api::requests::{
    AdjustUsageBody, InboundQuery, IntegrationBody, ResetUsageBody, RuleBody, SuspendBody,
};
use licensing_core::api::requests::{
    ApiKeyBody, AuditQuery, BlacklistBody, BranchBody, BulkAction, BulkLicenseBody, CustomerBody,
    CustomerListQuery, DetachQuery, DeviceListQuery, EntitlementBody, EntitlementListQuery,
    ExtendBody, ForgottenBody, LicenseCreate, LicenseListQuery, LicenseUpdate, Paging, PolicyBody,
    PolicyListQuery, ProductBody, ProductListQuery, ReleaseData, ReleaseListQuery, RequestLogQuery,
    SettingsBody, WebhookBody,
};
use licensing_core::api::{
    ApiKeyList, AuditPage, BulkLicenseResult, CustomerDeleted, CustomerPage, Deleted, DeliveryPage,
    EntitlementPage, HwidForgotten, HwidPage, IpForgotten, IpPage, LicenseDeleted, LicenseEmailed,
    LicenseFileBody, LicenseFileIssued, LicenseKeyDeleted, LicensePage, PolicyDeleted, PolicyPage,
    ProductPage, ReleasePage, RequestLogPage, SessionPage, WebhookList,
};
use licensing_core::api::{
    InboundEventView, InboundPage, IntegrationDeleted, IntegrationList, IntegrationView,
    RuleDeleted, RuleList,
};
use licensing_core::crypto::inbound::Provider;
use licensing_core::model::PriceRule;
use licensing_core::model::{
    ApiKeyCreated, BlacklistEntry, Branch, Customer, Entitlement, License, LicenseDetail,
    LicenseSession, MeterUsage, Policy, Product, PublicKeys, ReleaseView, SigningKey, Statistics,
    TeamSettings, WebhookDelivery, WebhookView, WebhookWithSecret,
};
use licensing_core::operations::access::{
    CreateApiKey, CreateBlacklistEntry, DeleteBlacklistEntry, ListApiKeys, ListBlacklist,
    RevokeApiKey,
};
use licensing_core::operations::customers::{
    CreateCustomer, CreatePortalSession, DeleteCustomer, GetCustomer, ListCustomers, UpdateCustomer,
};
use licensing_core::operations::devices::{
    ListHwids, ListIps, ListRequests, SetHwidForgotten, SetIpForgotten,
};
use licensing_core::operations::entitlements::{
    CreateEntitlement, DeleteEntitlement, GetEntitlement, ListEntitlements, UpdateEntitlement,
};
use licensing_core::operations::floating::{ListSessions, RevokeSession};
use licensing_core::operations::integrations::{
    CreateRule, DeleteIntegration, DeleteRule, GetInboundEvent, GetIntegration, ListInboundEvents,
    ListIntegrations, ListRules, PutIntegration, ReplayInboundEvent, UpdateRule,
};
use licensing_core::operations::licenses::{
    BulkLicenses, CreateLicense, DeleteLicense, DeleteLicenseByKey, EmailLicense, ExtendLicense,
    GetLicense, GetLicenseByKey, IssueLicenseFile, ListLicenses, SuspendLicense, UnsuspendLicense,
    UpdateLicense,
};
use licensing_core::operations::policies::{
    CreatePolicy, DeletePolicy, GetPolicy, ListPolicies, UpdatePolicy,
};
use licensing_core::operations::products::{
    CreateBranch, CreateProduct, DeleteBranch, DeleteProduct, GetProduct, ListBranches,
    ListProducts, UpdateProduct,
};
use licensing_core::operations::releases::{
    CreateRelease, DeleteArtifact, DeleteRelease, GetRelease, ListArtifacts, ListReleases,
    UpdateRelease, UploadArtifact,
};
use licensing_core::operations::team::{
    ActivateSigningKey, CreateSigningKey, GetPublicKeys, GetSettings, GetStatistics, ListAudit,
    RetireSigningKey, RotateSigningKey, UpdateSettings,
};
use licensing_core::operations::usage::{
    AdjustUsage, GetUsage, LicenseUsage, MeterCode, ResetUsage,
};
use licensing_core::operations::webhooks::{
    CreateWebhook, DeleteWebhook, GetDelivery, GetWebhook, ListDeliveries, ListWebhooks, Redeliver,
    RotateWebhookSecret, SendTestEvent, UpdateWebhook,
};
use licensing_core::{
    ApiKeyId, BlacklistId, BranchId, CustomerId, DeliveryId, EntitlementId, HwidId, IpId,
    LicenseId, LicenseKey, LicenseSessionId, PolicyId, ProductId, ReleaseId, WebhookId,
};
use licensing_core::{InboundId, RuleId};

use super::{ArtifactUpload, DevClient, ReleaseUpload, Upload, collect, kid_of};
use crate::Error;

impl DevClient {
    // Licenses.

    /// `POST {dev}/licenses`.
    pub async fn create_license(&self, body: &LicenseCreate) -> Result<LicenseDetail, Error> {
        self.perform(&CreateLicense(body.clone())).await
    }

    /// `GET {dev}/licenses`: one page.
    pub async fn list_licenses(&self, query: &LicenseListQuery) -> Result<LicensePage, Error> {
        self.perform(&ListLicenses(query.clone())).await
    }

    /// Every license matching the query's filters, page after page.
    pub async fn all_licenses(&self, query: &LicenseListQuery) -> Result<Vec<License>, Error> {
        collect(|page| {
            let mut q = query.clone();
            q.paging.page = page;
            async move { self.list_licenses(&q).await }
        })
        .await
    }

    /// `GET {dev}/licenses/{licenseKey}`.
    pub async fn get_license(&self, key: &LicenseKey) -> Result<LicenseDetail, Error> {
        self.perform(&GetLicenseByKey(*key)).await
    }

    /// `GET {dev}/licenses/id/{licenseId}`.
    pub async fn get_license_by_id(&self, id: LicenseId) -> Result<LicenseDetail, Error> {
        self.perform(&GetLicense(id)).await
    }

    /// `PUT {dev}/licenses/id/{licenseId}`: members left out keep their values.
    pub async fn update_license(
        &self,
        id: LicenseId,
        body: &LicenseUpdate,
    ) -> Result<LicenseDetail, Error> {
        self.perform(&UpdateLicense(id, body.clone())).await
    }

    /// (ext) `POST {dev}/licenses/id/{licenseId}/extend`: the expiry moved `days` later (1 to
    /// 3650; needs `licenses:extend`, which `licenses:write` includes).
    pub async fn extend_license(&self, id: LicenseId, days: u32) -> Result<LicenseDetail, Error> {
        let body = ExtendBody {
            days: Some(i64::from(days)),
        };
        self.perform(&ExtendLicense(id, body)).await
    }

    /// (ext) `POST {dev}/licenses/bulk`: suspends, unsuspends or deletes up to 100 licenses at
    /// once (scope `licenses:suspend`, `licenses:write` to delete); the answer lists what was
    /// done and, with why, what was refused, license by license.
    pub async fn bulk_licenses(
        &self,
        action: BulkAction,
        ids: &[LicenseId],
    ) -> Result<BulkLicenseResult, Error> {
        self.perform(&BulkLicenses(BulkLicenseBody::new(action, ids)))
            .await
    }

    /// `POST {dev}/licenses/id/{licenseId}/suspend` (scope `licenses:suspend`); a license
    /// already suspended is answered unchanged.
    pub async fn suspend_license(&self, id: LicenseId) -> Result<LicenseDetail, Error> {
        self.perform(&SuspendLicense(id, SuspendBody::default()))
            .await
    }

    /// (ext) [`suspend_license`](Self::suspend_license) for `reason` (1 to 500 characters): the
    /// license's `suspensionReason` until the suspension is lifted, and in the audit log.
    pub async fn suspend_license_because(
        &self,
        id: LicenseId,
        reason: &str,
    ) -> Result<LicenseDetail, Error> {
        self.perform(&SuspendLicense(id, SuspendBody::because(reason)))
            .await
    }

    /// `POST {dev}/licenses/id/{licenseId}/unsuspend` (scope `licenses:suspend`).
    pub async fn unsuspend_license(&self, id: LicenseId) -> Result<LicenseDetail, Error> {
        self.perform(&UnsuspendLicense(id)).await
    }

    /// (ext) `POST {dev}/licenses/id/{licenseId}/email`: the license key e-mailed again to
    /// each of the license's customers with an address (scope `licenses:email`; the server
    /// needs SMTP).
    pub async fn email_license(&self, id: LicenseId) -> Result<LicenseEmailed, Error> {
        self.perform(&EmailLicense(id)).await
    }

    /// (ext) `POST {dev}/licenses/id/{licenseId}/file`: a signed license file for offline use
    /// (bound to one machine or to none, encrypted unless asked not to be); check it with
    /// [`crate::LicenseFile`].
    pub async fn issue_license_file(
        &self,
        id: LicenseId,
        body: &LicenseFileBody,
    ) -> Result<LicenseFileIssued, Error> {
        self.perform(&IssueLicenseFile(id, body.clone())).await
    }

    /// `DELETE {dev}/licenses/{licenseKey}`.
    pub async fn delete_license(&self, key: &LicenseKey) -> Result<LicenseKeyDeleted, Error> {
        self.perform(&DeleteLicenseByKey(*key)).await
    }

    /// `DELETE {dev}/licenses/id/{licenseId}`.
    pub async fn delete_license_by_id(&self, id: LicenseId) -> Result<LicenseDeleted, Error> {
        self.perform(&DeleteLicense(id)).await
    }

    // Devices and seats.

    /// `GET {dev}/licenses/id/{licenseId}/hwid`.
    pub async fn list_hwids(
        &self,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> Result<HwidPage, Error> {
        self.perform(&ListHwids(license, query.clone())).await
    }

    // Usage meters.

    /// (ext) `GET {dev}/licenses/id/{licenseId}/usage` (scope `usage:read`): the license's
    /// meters, each with this period's count and the last 12 periods'.
    pub async fn usage(&self, license: LicenseId) -> Result<LicenseUsage, Error> {
        self.perform(&GetUsage(license)).await
    }

    /// (ext) `POST {dev}/licenses/id/{licenseId}/usage/{meter}/adjust` (scope `usage:write`):
    /// adds `delta` to the meter's count of the current period (negative takes away, never
    /// below 0), for `reason`, audited.
    pub async fn adjust_usage(
        &self,
        license: LicenseId,
        meter: &str,
        delta: i64,
        reason: &str,
    ) -> Result<MeterUsage, Error> {
        self.perform(&AdjustUsage(
            license,
            MeterCode(meter.to_owned()),
            AdjustUsageBody::new(delta, reason),
        ))
        .await
    }

    /// (ext) `POST {dev}/licenses/id/{licenseId}/usage/{meter}/reset` (scope `usage:write`):
    /// sets the meter's count of the current period to 0, audited (with `reason` when given).
    pub async fn reset_usage(
        &self,
        license: LicenseId,
        meter: &str,
        reason: Option<&str>,
    ) -> Result<MeterUsage, Error> {
        self.perform(&ResetUsage(
            license,
            MeterCode(meter.to_owned()),
            ResetUsageBody {
                reason: reason.map(str::to_owned),
            },
        ))
        .await
    }

    /// (ext) `GET {dev}/licenses/id/{licenseId}/requests`: one page of the license's request
    /// history (every client request that reached it, accepted or refused), newest first unless
    /// the query says otherwise.
    pub async fn license_requests(
        &self,
        license: LicenseId,
        query: &RequestLogQuery,
    ) -> Result<RequestLogPage, Error> {
        self.perform(&ListRequests(license, query.clone())).await
    }

    /// `PATCH {dev}/licenses/id/{licenseId}/hwid/{hwidId}`.
    pub async fn set_hwid_forgotten(
        &self,
        license: LicenseId,
        hwid: HwidId,
        forgotten: bool,
    ) -> Result<HwidForgotten, Error> {
        let body = ForgottenBody {
            forgotten: Some(forgotten),
        };
        self.perform(&SetHwidForgotten(license, hwid, body)).await
    }

    /// `GET {dev}/licenses/id/{licenseId}/ip-address`.
    pub async fn list_ips(
        &self,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> Result<IpPage, Error> {
        self.perform(&ListIps(license, query.clone())).await
    }

    /// `PATCH {dev}/licenses/id/{licenseId}/ip-address/{ipId}`.
    pub async fn set_ip_forgotten(
        &self,
        license: LicenseId,
        ip: IpId,
        forgotten: bool,
    ) -> Result<IpForgotten, Error> {
        let body = ForgottenBody {
            forgotten: Some(forgotten),
        };
        self.perform(&SetIpForgotten(license, ip, body)).await
    }

    /// (ext) `GET {dev}/licenses/id/{licenseId}/sessions`: one page of the license's live
    /// floating sessions, newest first unless `paging` says otherwise.
    pub async fn list_sessions(
        &self,
        license: LicenseId,
        paging: &Paging,
    ) -> Result<SessionPage, Error> {
        self.perform(&ListSessions(license, *paging)).await
    }

    /// (ext) `DELETE {dev}/licenses/id/{licenseId}/sessions/{sessionId}`: the session ends and
    /// its seat is free at once (scope `licenses:devices`).
    pub async fn revoke_session(
        &self,
        license: LicenseId,
        session: LicenseSessionId,
    ) -> Result<LicenseSession, Error> {
        self.perform(&RevokeSession(license, session)).await
    }

    // Customers.

    /// (ext) `POST {dev}/customers`.
    pub async fn create_customer(&self, body: &CustomerBody) -> Result<Customer, Error> {
        self.perform(&CreateCustomer(body.clone())).await
    }

    /// `GET {dev}/customers`: one page.
    pub async fn list_customers(&self, query: &CustomerListQuery) -> Result<CustomerPage, Error> {
        self.perform(&ListCustomers(query.clone())).await
    }

    /// Every customer matching the query, page after page.
    pub async fn all_customers(&self, query: &CustomerListQuery) -> Result<Vec<Customer>, Error> {
        collect(|page| {
            let mut q = query.clone();
            q.paging.page = page;
            async move { self.list_customers(&q).await }
        })
        .await
    }

    /// `GET {dev}/customers/{customerId}`.
    pub async fn get_customer(&self, id: CustomerId) -> Result<Customer, Error> {
        self.perform(&GetCustomer(id)).await
    }

    /// `PUT {dev}/customers/{customerId}`.
    pub async fn update_customer(
        &self,
        id: CustomerId,
        body: &CustomerBody,
    ) -> Result<Customer, Error> {
        self.perform(&UpdateCustomer(id, body.clone())).await
    }

    /// `DELETE {dev}/customers/{customerId}`.
    pub async fn delete_customer(&self, id: CustomerId) -> Result<CustomerDeleted, Error> {
        self.perform(&DeleteCustomer(id)).await
    }

    /// (ext) `POST {dev}/customers/{customerId}/portal-sessions`: a one-use link (15 minutes)
    /// that signs the customer in to the team's customer portal, to hand to their browser;
    /// `license` limits the session to that license of theirs.
    pub async fn create_portal_session(
        &self,
        id: CustomerId,
        license: Option<licensing_core::LicenseId>,
    ) -> Result<licensing_core::api::PortalLink, Error> {
        let body = licensing_core::api::requests::PortalSessionBody {
            license_id: license.map(|l| l.to_string()),
        };
        self.perform(&CreatePortalSession(id, body)).await
    }

    // Entitlements (ext).

    /// (ext) `POST {dev}/entitlements`: a feature licenses grant, directly or through their
    /// products (`code` is what applications check, and never changes).
    pub async fn create_entitlement(&self, body: &EntitlementBody) -> Result<Entitlement, Error> {
        self.perform(&CreateEntitlement(body.clone())).await
    }

    /// (ext) `GET {dev}/entitlements`: one page.
    pub async fn list_entitlements(
        &self,
        query: &EntitlementListQuery,
    ) -> Result<EntitlementPage, Error> {
        self.perform(&ListEntitlements(query.clone())).await
    }

    /// Every entitlement matching the query, page after page.
    pub async fn all_entitlements(
        &self,
        query: &EntitlementListQuery,
    ) -> Result<Vec<Entitlement>, Error> {
        collect(|page| {
            let mut q = query.clone();
            q.paging.page = page;
            async move { self.list_entitlements(&q).await }
        })
        .await
    }

    /// (ext) `GET {dev}/entitlements/{entitlementId}`.
    pub async fn get_entitlement(&self, id: EntitlementId) -> Result<Entitlement, Error> {
        self.perform(&GetEntitlement(id)).await
    }

    /// (ext) `PUT {dev}/entitlements/{entitlementId}`: its name or metadata (members left out
    /// keep their values).
    pub async fn update_entitlement(
        &self,
        id: EntitlementId,
        body: &EntitlementBody,
    ) -> Result<Entitlement, Error> {
        self.perform(&UpdateEntitlement(id, body.clone())).await
    }

    /// (ext) `DELETE {dev}/entitlements/{entitlementId}`: no license or product grants it any
    /// more.
    pub async fn delete_entitlement(&self, id: EntitlementId) -> Result<Deleted, Error> {
        self.perform(&DeleteEntitlement(id)).await
    }

    // Policies (ext).

    /// (ext) `POST {dev}/policies`: a named plan of license terms that licenses on it inherit,
    /// live.
    pub async fn create_policy(&self, body: &PolicyBody) -> Result<Policy, Error> {
        self.perform(&CreatePolicy(body.clone())).await
    }

    /// (ext) `GET {dev}/policies`: one page.
    pub async fn list_policies(&self, query: &PolicyListQuery) -> Result<PolicyPage, Error> {
        self.perform(&ListPolicies(query.clone())).await
    }

    /// Every policy matching the query, page after page.
    pub async fn all_policies(&self, query: &PolicyListQuery) -> Result<Vec<Policy>, Error> {
        collect(|page| {
            let mut q = query.clone();
            q.paging.page = page;
            async move { self.list_policies(&q).await }
        })
        .await
    }

    /// (ext) `GET {dev}/policies/{policyId}`.
    pub async fn get_policy(&self, id: PolicyId) -> Result<Policy, Error> {
        self.perform(&GetPolicy(id)).await
    }

    /// (ext) `PUT {dev}/policies/{policyId}`: members left out keep their values, `null` clears
    /// one; every license on the policy follows at once.
    pub async fn update_policy(&self, id: PolicyId, body: &PolicyBody) -> Result<Policy, Error> {
        self.perform(&UpdatePolicy(id, body.clone())).await
    }

    /// (ext) `DELETE {dev}/policies/{policyId}`: refused (409) while licenses use it, unless
    /// `detach` first writes its terms into them.
    pub async fn delete_policy(&self, id: PolicyId, detach: bool) -> Result<PolicyDeleted, Error> {
        self.perform(&DeletePolicy(id, DetachQuery { detach }))
            .await
    }

    // Payment integrations (ext).

    /// (ext) `GET {dev}/integrations`: the team's payment integrations, their secrets shown by
    /// their last 4 characters.
    pub async fn list_integrations(&self) -> Result<IntegrationList, Error> {
        self.perform(&ListIntegrations).await
    }

    /// (ext) `GET {dev}/integrations/{provider}`.
    pub async fn get_integration(&self, provider: Provider) -> Result<IntegrationView, Error> {
        self.perform(&GetIntegration(provider)).await
    }

    /// (ext) `PUT {dev}/integrations/{provider}`: sets up or changes the integration (a new
    /// `webhookSecret` leaves the one it replaces accepted for 24 hours).
    pub async fn put_integration(
        &self,
        provider: Provider,
        body: &IntegrationBody,
    ) -> Result<IntegrationView, Error> {
        self.perform(&PutIntegration(provider, body.clone())).await
    }

    /// (ext) `DELETE {dev}/integrations/{provider}`.
    pub async fn delete_integration(
        &self,
        provider: Provider,
    ) -> Result<IntegrationDeleted, Error> {
        self.perform(&DeleteIntegration(provider)).await
    }

    /// (ext) `GET {dev}/integrations/{provider}/rules`.
    pub async fn list_rules(&self, provider: Provider) -> Result<RuleList, Error> {
        self.perform(&ListRules(provider)).await
    }

    /// (ext) `POST {dev}/integrations/{provider}/rules`: what is bought → the policy of the
    /// license it gets.
    pub async fn create_rule(
        &self,
        provider: Provider,
        body: &RuleBody,
    ) -> Result<PriceRule, Error> {
        self.perform(&CreateRule(provider, body.clone())).await
    }

    /// (ext) `PUT {dev}/integrations/{provider}/rules/{ruleId}`: members left out keep their
    /// values.
    pub async fn update_rule(
        &self,
        provider: Provider,
        id: RuleId,
        body: &RuleBody,
    ) -> Result<PriceRule, Error> {
        self.perform(&UpdateRule(provider, id, body.clone())).await
    }

    /// (ext) `DELETE {dev}/integrations/{provider}/rules/{ruleId}`.
    pub async fn delete_rule(&self, provider: Provider, id: RuleId) -> Result<RuleDeleted, Error> {
        self.perform(&DeleteRule(provider, id)).await
    }

    /// (ext) `GET {dev}/integrations/events`: one page of the events received, newest first.
    pub async fn list_payment_events(&self, query: &InboundQuery) -> Result<InboundPage, Error> {
        self.perform(&ListInboundEvents(*query)).await
    }

    /// (ext) `GET {dev}/integrations/events/{eventId}`: with the payload as received.
    pub async fn get_payment_event(&self, id: InboundId) -> Result<InboundEventView, Error> {
        self.perform(&GetInboundEvent(id)).await
    }

    /// (ext) `POST {dev}/integrations/events/{eventId}/replay`: applies it again, as a new
    /// delivery (a duplicate when it was applied already).
    pub async fn replay_payment_event(&self, id: InboundId) -> Result<InboundEventView, Error> {
        self.perform(&ReplayInboundEvent(id)).await
    }

    // Products and branches (ext).

    /// (ext) `POST {dev}/products`.
    pub async fn create_product(&self, body: &ProductBody) -> Result<Product, Error> {
        self.perform(&CreateProduct(body.clone())).await
    }

    /// (ext) `GET {dev}/products`: one page.
    pub async fn list_products(&self, query: &ProductListQuery) -> Result<ProductPage, Error> {
        self.perform(&ListProducts(query.clone())).await
    }

    /// Every product, page after page.
    pub async fn all_products(&self, query: &ProductListQuery) -> Result<Vec<Product>, Error> {
        collect(|page| {
            let mut q = query.clone();
            q.paging.page = page;
            async move { self.list_products(&q).await }
        })
        .await
    }

    /// (ext) `GET {dev}/products/{productId}`.
    pub async fn get_product(&self, id: ProductId) -> Result<Product, Error> {
        self.perform(&GetProduct(id)).await
    }

    /// (ext) `PUT {dev}/products/{productId}`.
    pub async fn update_product(
        &self,
        id: ProductId,
        body: &ProductBody,
    ) -> Result<Product, Error> {
        self.perform(&UpdateProduct(id, body.clone())).await
    }

    /// (ext) `DELETE {dev}/products/{productId}`: its releases and branches go with it.
    pub async fn delete_product(&self, id: ProductId) -> Result<Deleted, Error> {
        self.perform(&DeleteProduct(id)).await
    }

    /// (ext) `POST {dev}/products/{productId}/branches`.
    pub async fn create_branch(&self, product: ProductId, name: &str) -> Result<Branch, Error> {
        let body = BranchBody {
            name: Some(name.to_owned()),
        };
        self.perform(&CreateBranch(product, body)).await
    }

    /// (ext) `GET {dev}/products/{productId}/branches`.
    pub async fn list_branches(&self, product: ProductId) -> Result<Vec<Branch>, Error> {
        Ok(self.perform(&ListBranches(product)).await?.branches)
    }

    /// (ext) `DELETE {dev}/products/{productId}/branches/{branchId}`.
    pub async fn delete_branch(
        &self,
        product: ProductId,
        branch: BranchId,
    ) -> Result<Deleted, Error> {
        self.perform(&DeleteBranch(product, branch)).await
    }

    // Releases.

    /// `POST {dev}/releases` (multipart), with an optional file.
    pub async fn create_release(
        &self,
        data: &ReleaseData,
        file: Option<Upload>,
    ) -> Result<ReleaseView, Error> {
        self.perform(&CreateRelease(ReleaseUpload::new(data, file)))
            .await
    }

    /// `GET {dev}/releases`: one page.
    pub async fn list_releases(&self, query: &ReleaseListQuery) -> Result<ReleasePage, Error> {
        self.perform(&ListReleases(query.clone())).await
    }

    /// Every release matching the query, page after page.
    pub async fn all_releases(&self, query: &ReleaseListQuery) -> Result<Vec<ReleaseView>, Error> {
        collect(|page| {
            let mut q = query.clone();
            q.paging.page = page;
            async move { self.list_releases(&q).await }
        })
        .await
    }

    /// (ext) `POST {dev}/releases/{releaseId}/artifacts` (multipart): an update artifact.
    pub async fn upload_artifact(
        &self,
        release: ReleaseId,
        artifact: &ArtifactUpload,
    ) -> Result<licensing_core::model::Artifact, Error> {
        self.perform(&UploadArtifact(release, artifact.clone()))
            .await
    }

    /// (ext) `GET {dev}/releases/{releaseId}/artifacts`.
    pub async fn list_artifacts(
        &self,
        release: ReleaseId,
    ) -> Result<Vec<licensing_core::model::Artifact>, Error> {
        Ok(self.perform(&ListArtifacts(release)).await?.artifacts)
    }

    /// (ext) `DELETE {dev}/releases/{releaseId}/artifacts/{artifactId}`.
    pub async fn delete_artifact(
        &self,
        release: ReleaseId,
        artifact: licensing_core::ArtifactId,
    ) -> Result<Deleted, Error> {
        self.perform(&DeleteArtifact(release, artifact)).await
    }

    /// (ext) `GET {dev}/releases/{releaseId}`.
    pub async fn get_release(&self, id: ReleaseId) -> Result<ReleaseView, Error> {
        self.perform(&GetRelease(id)).await
    }

    /// `PUT {dev}/releases/{releaseId}` (multipart): with a file to replace it, or with
    /// `keepExistingFile`.
    pub async fn update_release(
        &self,
        id: ReleaseId,
        data: &ReleaseData,
        file: Option<Upload>,
    ) -> Result<ReleaseView, Error> {
        self.perform(&UpdateRelease(id, ReleaseUpload::new(data, file)))
            .await
    }

    /// (ext) `DELETE {dev}/releases/{releaseId}`.
    pub async fn delete_release(&self, id: ReleaseId) -> Result<Deleted, Error> {
        self.perform(&DeleteRelease(id)).await
    }

    // The team.

    /// `GET {dev}/statistics` (cached 15 minutes by the server).
    pub async fn statistics(&self) -> Result<Statistics, Error> {
        self.perform(&GetStatistics).await
    }

    /// (ext) `GET {dev}/settings`.
    pub async fn settings(&self) -> Result<TeamSettings, Error> {
        self.perform(&GetSettings).await
    }

    /// (ext) `PUT {dev}/settings`: members left out keep their values.
    pub async fn update_settings(&self, body: &SettingsBody) -> Result<TeamSettings, Error> {
        self.perform(&UpdateSettings(body.clone())).await
    }

    /// (ext) `GET {dev}/public-key`: what [`crate::LicenseClient`] is configured with.
    pub async fn public_keys(&self) -> Result<PublicKeys, Error> {
        self.perform(&GetPublicKeys).await
    }

    /// (ext) `POST {dev}/signing-keys/rotate`: a new Ed25519 key signs answers and license
    /// files from now on; the former ones stay listed in [`public_keys`](Self::public_keys)
    /// until retired.
    pub async fn rotate_signing_key(&self) -> Result<SigningKey, Error> {
        self.perform(&RotateSigningKey).await
    }

    /// (ext) `POST {dev}/signing-keys`: the next signing key (state `next`), listed for
    /// applications to ship and signing nothing until [`activate_signing_key`](Self::activate_signing_key).
    pub async fn create_signing_key(&self) -> Result<SigningKey, Error> {
        self.perform(&CreateSigningKey).await
    }

    /// (ext) `POST {dev}/signing-keys/{kid}/activate`: the next key signs from now on; the
    /// one it replaces stays listed (`former`) until retired.
    pub async fn activate_signing_key(&self, kid: &str) -> Result<SigningKey, Error> {
        self.perform(&ActivateSigningKey(kid_of(kid)?)).await
    }

    /// (ext) `DELETE {dev}/signing-keys/{kid}`: clients stop trusting a former or next key
    /// (the active one cannot be retired).
    pub async fn retire_signing_key(&self, kid: &str) -> Result<SigningKey, Error> {
        self.perform(&RetireSigningKey(kid_of(kid)?)).await
    }

    /// (ext) `POST {dev}/blacklist`.
    pub async fn create_blacklist_entry(
        &self,
        body: &BlacklistBody,
    ) -> Result<BlacklistEntry, Error> {
        self.perform(&CreateBlacklistEntry(body.clone())).await
    }

    /// (ext) `GET {dev}/blacklist`, with hit counts.
    pub async fn list_blacklist(&self) -> Result<Vec<BlacklistEntry>, Error> {
        Ok(self.perform(&ListBlacklist).await?.blacklist)
    }

    /// (ext) `DELETE {dev}/blacklist/{id}`.
    pub async fn delete_blacklist_entry(&self, id: BlacklistId) -> Result<Deleted, Error> {
        self.perform(&DeleteBlacklistEntry(id)).await
    }

    /// (ext) `POST {dev}/api-keys`: the key is in the answer, this once. Build the body with
    /// [`ApiKeyBody::named`] and, for a scoped key, [`ApiKeyBody::with_scopes`] and
    /// [`ApiKeyBody::for_products`]; a key can only grant what it has itself (else
    /// [`ResultCode::Forbidden`](licensing_core::api::ResultCode::Forbidden)).
    ///
    /// ```no_run
    /// # async fn demo(dev: &licensing_sdk::DevClient, product: licensing_sdk::core::ProductId)
    /// # -> Result<(), licensing_sdk::Error> {
    /// use licensing_sdk::core::api::requests::ApiKeyBody;
    /// use licensing_sdk::core::model::{Resource, Scope};
    ///
    /// // A key for the support tool: reads licenses of one product, frees seats.
    /// let support = dev
    ///     .create_api_key(
    ///         &ApiKeyBody::named("support tool")
    ///             .with_scopes([Scope::write(Resource::Licenses)])
    ///             .for_products([product]),
    ///     )
    ///     .await?;
    /// println!("give the support tool {}", support.key);
    /// # Ok(()) }
    /// ```
    pub async fn create_api_key(&self, body: &ApiKeyBody) -> Result<ApiKeyCreated, Error> {
        self.perform(&CreateApiKey(body.clone())).await
    }

    /// (ext) `GET {dev}/api-keys` (without the keys).
    pub async fn list_api_keys(&self) -> Result<ApiKeyList, Error> {
        self.perform(&ListApiKeys).await
    }

    /// (ext) `DELETE {dev}/api-keys/{id}`: revokes the key.
    pub async fn revoke_api_key(&self, id: ApiKeyId) -> Result<Deleted, Error> {
        self.perform(&RevokeApiKey(id)).await
    }

    // The audit log.

    /// (ext) `GET {dev}/audit-log`: one page of the team's audit log, newest first unless the
    /// query says otherwise (the key needs `audit-log:read`).
    pub async fn audit_log(&self, query: &AuditQuery) -> Result<AuditPage, Error> {
        self.perform(&ListAudit(query.clone())).await
    }

    // Webhooks.

    /// (ext) `POST {dev}/webhooks`: a new endpoint, with its signing secret (shown only here).
    pub async fn create_webhook(&self, body: &WebhookBody) -> Result<WebhookWithSecret, Error> {
        self.perform(&CreateWebhook(body.clone())).await
    }

    /// (ext) `GET {dev}/webhooks`.
    pub async fn list_webhooks(&self) -> Result<WebhookList, Error> {
        self.perform(&ListWebhooks).await
    }

    /// (ext) `GET {dev}/webhooks/{id}`.
    pub async fn get_webhook(&self, id: WebhookId) -> Result<WebhookView, Error> {
        self.perform(&GetWebhook(id)).await
    }

    /// (ext) `PATCH {dev}/webhooks/{id}`: the members given change.
    pub async fn update_webhook(
        &self,
        id: WebhookId,
        body: &WebhookBody,
    ) -> Result<WebhookView, Error> {
        self.perform(&UpdateWebhook(id, body.clone())).await
    }

    /// (ext) `DELETE {dev}/webhooks/{id}`, with its delivery log.
    pub async fn delete_webhook(&self, id: WebhookId) -> Result<Deleted, Error> {
        self.perform(&DeleteWebhook(id)).await
    }

    /// (ext) `POST {dev}/webhooks/{id}/rotate-secret`: the new secret (the old one signs too
    /// for 24 hours).
    pub async fn rotate_webhook_secret(&self, id: WebhookId) -> Result<WebhookWithSecret, Error> {
        self.perform(&RotateWebhookSecret(id)).await
    }

    /// (ext) `POST {dev}/webhooks/{id}/test`: queues a `webhook.test` event.
    pub async fn test_webhook(&self, id: WebhookId) -> Result<WebhookDelivery, Error> {
        self.perform(&SendTestEvent(id)).await
    }

    /// (ext) `GET {dev}/webhooks/{id}/deliveries`: one page of the delivery log.
    pub async fn webhook_deliveries(
        &self,
        id: WebhookId,
        paging: &Paging,
    ) -> Result<DeliveryPage, Error> {
        self.perform(&ListDeliveries(id, *paging)).await
    }

    /// (ext) `GET {dev}/webhooks/{id}/deliveries/{delivery}`: one delivery, with its attempts
    /// and the exact body sent.
    pub async fn webhook_delivery(
        &self,
        id: WebhookId,
        delivery: DeliveryId,
    ) -> Result<WebhookDelivery, Error> {
        self.perform(&GetDelivery(id, delivery)).await
    }

    /// (ext) `POST {dev}/webhooks/{id}/deliveries/{delivery}/redeliver`: the same event again.
    pub async fn redeliver_webhook(
        &self,
        id: WebhookId,
        delivery: DeliveryId,
    ) -> Result<WebhookDelivery, Error> {
        self.perform(&Redeliver(id, delivery)).await
    }
}
