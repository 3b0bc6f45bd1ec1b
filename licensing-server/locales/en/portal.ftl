# The customer portal, and the e-mails it sends. English.
language-name = English
portal-title = { $team }: customer portal
sign-in-heading = Sign in
sign-in-intro = See your licenses, free a device you no longer use, and download your software.
email-label = Your e-mail address
email-button = E-mail me a sign-in link
key-label = Your license key
key-button = Sign in with the key
or = or
mail-sent-heading = Check your e-mail
mail-sent-body = If { $address } belongs to a customer here, we sent it a sign-in link. The link works once, for 15 minutes.
code-label = Or type the 6-digit code from the e-mail here
code-button = Sign in with the code
code-wrong = That code is not right: { $left ->
    [one] one more try.
   *[other] { $left } more tries.
}
code-gone = This sign-in has expired or was used up. Ask for a new e-mail.
link-heading = Sign in to { $team }
link-body = Continue to see your licenses. This link works once.
link-button = Continue
link-gone = This sign-in link has expired or was used already. Ask for a new one.
email-wrong = That is not an e-mail address. Check it and try again.
key-wrong = No license has that key. Check it and try again.
too-many = Too many attempts. Try again in { $minutes ->
    [one] a minute.
   *[other] { $minutes } minutes.
}
sign-in-off = This way of signing in is not offered here.
csrf-refused = This form has expired. Reload the page and try again.
licenses-heading = Your licenses
no-licenses = No licenses belong to this sign-in.
license-heading = License
key = License key
status = Status
status-active = Active
status-expired = Expired
status-grace = Expired, in its grace period until { $date }
status-suspended = Suspended
status-not-started = Starts with its first use
expires = Expires
expires-never = Never
expires-on-use = { $days } days from its first use
products = Products
entitlements = Features
devices-heading = Devices
addresses-heading = Addresses
sessions-heading = Running copies
device = Device
address = Address
last-seen = Last seen
none-yet = None yet.
forget-button = Free this seat
forgotten = Freed. The seat can be used by another device.
budget = You can free up to { $count } devices or addresses yourself every { $days } days.
budget-spent = You have freed this license's { $count } seats for this period ({ $days } days). The next is possible on { $date }.
budget-none = This license does not let you free devices yourself. Ask { $team } for help.
forgotten-state = freed
downloads-heading = Downloads
downloads-none = Nothing to download yet.
version = Version { $version }
license-file = License file
license-file-hint = A license file lets the software run offline on that device.
end-button = End
session-ended = Ended. The copy's seat is free.
started = Started
billing = Manage billing and payment
billing-none = No payment account was found for this license.
back = All your licenses
details = Details
sign-out = Sign out
signed-out = You are signed out.
language-apply = Change
language = Language
not-found = There is nothing here.
problem = Something went wrong on our side. Try again in a moment.
mail-subject = Sign in to { $team }
mail-body =
    Hello,

    to sign in to the { $team } customer portal, open this link (it works once, for 15 minutes):

        { $link }

    Or type this code on the sign-in page: { $code }

    If you did not ask for this, ignore this e-mail: nothing happens.
license-mail-subject = Your license key for { $what }
license-mail-body =
    Hello { $name },

    your license key for { $what } is:

        { $key }

    { $expires }
license-mail-your-software = your software
license-mail-there = there
license-mail-until = It is valid until { $date }.
license-mail-days = It is valid for { $days } days from its first use.
license-mail-never = It does not expire.
reset-mail-subject = A seat of your license was freed
reset-mail-body =
    Hello,

    { $what } { $name } was freed from your license { $key } on { $date }, in the { $team } customer portal.

    If this was not you, contact { $team }.
reset-what-device = The device
reset-what-address = The address
month-1 = January
month-2 = February
month-3 = March
month-4 = April
month-5 = May
month-6 = June
month-7 = July
month-8 = August
month-9 = September
month-10 = October
month-11 = November
month-12 = December
date = { $month } { $day }, { $year }
