# Das Kundenportal und die E-Mails, die es verschickt. Deutsch.
language-name = Deutsch
portal-title = { $team }: Kundenportal
sign-in-heading = Anmelden
sign-in-intro = Sehen Sie Ihre Lizenzen, geben Sie ein Gerät frei, das Sie nicht mehr nutzen, und laden Sie Ihre Software herunter.
email-label = Ihre E-Mail-Adresse
email-button = Anmeldelink per E-Mail senden
key-label = Ihr Lizenzschlüssel
key-button = Mit dem Schlüssel anmelden
or = oder
mail-sent-heading = Sehen Sie in Ihr Postfach
mail-sent-body = Falls { $address } zu einem Kunden hier gehört, haben wir einen Anmeldelink dorthin geschickt. Der Link funktioniert einmal, 15 Minuten lang.
code-label = Oder geben Sie hier den 6-stelligen Code aus der E-Mail ein
code-button = Mit dem Code anmelden
code-wrong = Dieser Code stimmt nicht: { $left ->
    [one] noch ein Versuch.
   *[other] noch { $left } Versuche.
}
code-gone = Diese Anmeldung ist abgelaufen oder verbraucht. Fordern Sie eine neue E-Mail an.
link-heading = Bei { $team } anmelden
link-body = Weiter zu Ihren Lizenzen. Dieser Link funktioniert einmal.
link-button = Weiter
link-gone = Dieser Anmeldelink ist abgelaufen oder wurde schon benutzt. Fordern Sie einen neuen an.
email-wrong = Das ist keine E-Mail-Adresse. Prüfen Sie sie und versuchen Sie es erneut.
key-wrong = Keine Lizenz hat diesen Schlüssel. Prüfen Sie ihn und versuchen Sie es erneut.
too-many = Zu viele Versuche. Versuchen Sie es in { $minutes ->
    [one] einer Minute
   *[other] { $minutes } Minuten
} erneut.
sign-in-off = Diese Art der Anmeldung wird hier nicht angeboten.
csrf-refused = Dieses Formular ist abgelaufen. Laden Sie die Seite neu und versuchen Sie es erneut.
licenses-heading = Ihre Lizenzen
no-licenses = Zu dieser Anmeldung gehören keine Lizenzen.
license-heading = Lizenz
key = Lizenzschlüssel
status = Status
status-active = Aktiv
status-expired = Abgelaufen
status-grace = Abgelaufen, in der Kulanzfrist bis { $date }
status-suspended = Gesperrt
status-not-started = Beginnt mit der ersten Nutzung
expires = Läuft ab
expires-never = Nie
expires-on-use = { $days } Tage ab der ersten Nutzung
products = Produkte
entitlements = Funktionen
devices-heading = Geräte
addresses-heading = Adressen
sessions-heading = Laufende Kopien
device = Gerät
address = Adresse
last-seen = Zuletzt gesehen
none-yet = Noch keine.
forget-button = Platz freigeben
forgotten = Freigegeben. Ein anderes Gerät kann den Platz nutzen.
budget = Sie können alle { $days } Tage bis zu { $count } Geräte oder Adressen selbst freigeben.
budget-spent = Sie haben die { $count } Freigaben dieser Lizenz für diesen Zeitraum ({ $days } Tage) genutzt. Die nächste ist am { $date } möglich.
budget-none = Bei dieser Lizenz können Sie Geräte nicht selbst freigeben. Bitten Sie { $team } um Hilfe.
forgotten-state = freigegeben
downloads-heading = Downloads
downloads-none = Noch nichts zum Herunterladen.
version = Version { $version }
license-file = Lizenzdatei
license-file-hint = Mit einer Lizenzdatei läuft die Software auf diesem Gerät auch offline.
end-button = Beenden
session-ended = Beendet. Der Platz der Kopie ist frei.
started = Gestartet
billing = Zahlung und Abrechnung verwalten
billing-none = Für diese Lizenz wurde kein Zahlungskonto gefunden.
back = Alle Ihre Lizenzen
details = Details
sign-out = Abmelden
signed-out = Sie sind abgemeldet.
language-apply = Ändern
language = Sprache
not-found = Hier gibt es nichts.
problem = Bei uns ist etwas schiefgegangen. Versuchen Sie es gleich noch einmal.
mail-subject = Bei { $team } anmelden
mail-body =
    Hallo,

    um sich im Kundenportal von { $team } anzumelden, öffnen Sie diesen Link (er funktioniert einmal, 15 Minuten lang):

        { $link }

    Oder geben Sie auf der Anmeldeseite diesen Code ein: { $code }

    Falls Sie das nicht angefordert haben, ignorieren Sie diese E-Mail: Es passiert nichts.
license-mail-subject = Ihr Lizenzschlüssel für { $what }
license-mail-body =
    Hallo { $name },

    Ihr Lizenzschlüssel für { $what } lautet:

        { $key }

    { $expires }
license-mail-your-software = Ihre Software
license-mail-there = zusammen
license-mail-until = Er gilt bis { $date }.
license-mail-days = Er gilt { $days } Tage ab der ersten Nutzung.
license-mail-never = Er läuft nicht ab.
reset-mail-subject = Ein Platz Ihrer Lizenz wurde freigegeben
reset-mail-body =
    Hallo,

    { $what } { $name } wurde am { $date } im Kundenportal von { $team } von Ihrer Lizenz { $key } freigegeben.

    Falls Sie das nicht waren, wenden Sie sich an { $team }.
reset-what-device = Das Gerät
reset-what-address = Die Adresse
month-1 = Januar
month-2 = Februar
month-3 = März
month-4 = April
month-5 = Mai
month-6 = Juni
month-7 = Juli
month-8 = August
month-9 = September
month-10 = Oktober
month-11 = November
month-12 = Dezember
date = { $day }. { $month } { $year }
