//! The conformance suite every [`Store`] must pass (feature `testing`).
//!
//! ```ignore
//! licensing_core::store_test_suite!(
//!     runner: licensing_core::store::testing::ThreadRunner,
//!     store: async { MyStore::open_temporary().await },
//! );
//! ```
//!
//! expands to one `#[test]` per case. `runner` is anything implementing [`BlockOn`]; it is also
//! used from several threads at once by the concurrency case. An optional third argument,
//! `available: <bool expression>`, lets a suite of a store that needs an outside server return
//! early where none can be had (the expression says why, once).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

// The cases, one file per area, and the fixtures they share.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use super::*;
use crate::api::requests::{
    AuditQuery, CustomerListQuery, DeviceListQuery, LicenseListQuery, ProductListQuery,
    ReleaseListQuery,
};
use crate::crypto::{ApiKeySecret, PlainTeamKeys, StoredTeamKeys};
use crate::model::{
    Address, BlacklistType, Entitlement, ExpirationStart, ExpirationType, MetadataItem,
    OutboxMessage, ReleaseFile, ReleaseStatus, RequestType, SigningKey, SigningKeyChange,
    SigningKeyState,
};
use crate::validate::{BranchName, Email, Version};
use crate::verify::RecordChange;
use crate::{FileId, UserId};

mod accounts;
mod activity;
mod audit;
mod catalog;
mod concurrency;
mod entitlements;
mod fixtures;
mod idempotency;
mod isolation;
mod licenses;
mod mail;
mod payments;
mod policies;
mod portal;
mod request_log;
mod sessions;
mod team;
mod usage;
mod webhooks;

pub use accounts::*;
pub use activity::*;
pub use audit::*;
pub use catalog::*;
pub use concurrency::*;
pub use entitlements::*;
pub use fixtures::*;
pub use idempotency::*;
pub use isolation::*;
pub use licenses::*;
pub use mail::*;
pub use payments::*;
pub use policies::*;
pub use portal::*;
pub use request_log::*;
pub use sessions::*;
pub use team::*;
pub use usage::*;
pub use webhooks::*;

/// Runs a future to completion on the current thread.
pub trait BlockOn: Sync {
    /// Drives `f` to its output.
    fn block_on<F: Future>(&self, f: F) -> F::Output;
}

/// A minimal executor that parks the thread between polls; enough for stores that do not need
/// a runtime of their own.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadRunner;

struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

impl BlockOn for ThreadRunner {
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        let mut f = pin!(f);
        let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
                return out;
            }
            std::thread::park();
        }
    }
}

/// Expands to the whole suite as `#[test]` functions.
#[macro_export]
macro_rules! store_test_suite {
    (runner: $runner:expr, store: $make:expr $(,)?) => {
        $crate::store_test_suite!(runner: $runner, store: $make, available: true);
    };
    (runner: $runner:expr, store: $make:expr, available: $available:expr $(,)?) => {
        $crate::store_test_suite!(@async $runner, $make, $available;
            teams_are_created_read_listed_and_updated,
            api_keys_are_found_by_hash_and_revoked_within_their_team,
            licenses_are_created_and_read_by_id_and_key,
            license_keys_are_unique_within_a_team_only,
            a_key_read_before_names_only_its_license_afterwards,
            license_references_must_exist_in_the_same_team,
            license_updates_replace_and_deletes_cascade,
            license_lists_filter_sort_and_page,
            license_lists_sort_by_expiry_and_use_and_find_by_metadata,
            customers_are_searched_updated_and_detached_on_delete,
            products_delete_with_their_releases_and_branches,
            branches_have_unique_names_and_delete_their_releases,
            releases_check_references_versions_and_the_latest_rule,
            release_lists_filter_sort_and_page,
            device_lists_hide_forgotten_records_unless_asked,
            activity_records_devices_and_ips_within_limits,
            activity_after_the_first_read_is_the_same_atomic_step,
            activity_starts_the_activation_clock_once,
            activity_drops_the_least_recently_seen_records_at_the_cap,
            activity_never_drops_counted_records_and_refuses_at_the_cap,
            activity_without_a_required_hardware_identifier_records_no_device,
            forgetting_by_id_finds_the_record_among_many,
            usage_records_are_restored_as_they_are,
            session_keys_are_taken_once_per_team_within_the_window,
            product_and_release_lists_keep_to_a_product_restriction,
            blacklist_entries_are_unique_and_count_hits,
            statistics_buckets_merge_and_overview_counts,
            license_mail_is_queued_with_the_license_and_limited_per_day,
            outbox_messages_are_rescheduled_and_removed,
            audit_entries_are_written_with_their_change_only,
            audit_lists_filter_order_page_and_prune,
            audit_entries_are_restored_as_they_are,
            webhook_events_fan_out_into_ordered_deliveries,
            client_events_are_written_with_their_records_and_raised_once,
            nothing_crosses_team_boundaries,
            staff_accounts_have_addresses_unique_in_their_team_and_sessions_end_with_them,
            signing_keys_rotate_and_retire_under_the_teams_lock,
            entitlements_have_unique_codes_and_deleting_detaches_them,
            floating_sessions_count_while_live_and_end_once,
            idempotency_keys_are_claimed_once_kept_replayed_and_purged,
            a_keyed_write_marks_its_claim_applied_in_its_own_step,
            request_history_lists_filters_pages_and_prunes,
            policies_are_followed_by_their_licenses_and_deleted_or_detached,
            activity_decides_with_the_policys_terms,
            payment_events_apply_once_with_their_effect_and_links,
            release_artifacts_take_one_place_each_and_survive_updates,
            portal_tickets_are_spent_once_and_sessions_end,
            self_service_resets_keep_to_their_budget,
            usage_is_counted_within_limits_per_period_and_once_per_event,
        );
        #[test]
        fn concurrent_usage_never_passes_the_limit() {
            if !$available {
                return;
            }
            let runner = $runner;
            let store = $crate::store::testing::BlockOn::block_on(&runner, $make);
            $crate::store::testing::concurrent_usage_never_passes_the_limit(&store, &runner);
        }
        #[test]
        fn concurrent_self_service_resets_spend_exactly_the_budget() {
            if !$available {
                return;
            }
            let runner = $runner;
            let store = $crate::store::testing::BlockOn::block_on(&runner, $make);
            $crate::store::testing::concurrent_self_service_resets_spend_exactly_the_budget(&store, &runner);
        }
        #[test]
        fn concurrent_new_devices_never_exceed_the_limit() {
            if !$available {
                return;
            }
            let runner = $runner;
            let store = $crate::store::testing::BlockOn::block_on(&runner, $make);
            $crate::store::testing::concurrent_new_devices_never_exceed_the_limit(&store, &runner);
        }
        #[test]
        fn concurrent_machine_files_and_requests_never_exceed_the_limit() {
            if !$available {
                return;
            }
            let runner = $runner;
            let store = $crate::store::testing::BlockOn::block_on(&runner, $make);
            $crate::store::testing::concurrent_machine_files_and_requests_never_exceed_the_limit(&store, &runner);
        }
        #[test]
        fn concurrent_session_starts_admit_exactly_the_limit() {
            if !$available {
                return;
            }
            let runner = $runner;
            let store = $crate::store::testing::BlockOn::block_on(&runner, $make);
            $crate::store::testing::concurrent_session_starts_admit_exactly_the_limit(&store, &runner);
        }
        #[test]
        fn concurrent_claims_of_one_key_run_exactly_once() {
            if !$available {
                return;
            }
            let runner = $runner;
            let store = $crate::store::testing::BlockOn::block_on(&runner, $make);
            $crate::store::testing::concurrent_claims_of_one_key_run_exactly_once(&store, &runner);
        }
    };
    (@async $runner:expr, $make:expr, $available:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                if !$available {
                    return;
                }
                let runner = $runner;
                let store = $crate::store::testing::BlockOn::block_on(&runner, $make);
                $crate::store::testing::BlockOn::block_on(&runner, $crate::store::testing::$name(&store));
            }
        )*
    };
}
