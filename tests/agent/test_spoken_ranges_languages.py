"""Spoken time ranges in German, French, Dutch, Spanish and Italian: the same rules as
English (tests/lib/test_spoken_time.py), each English case said in the language and
meaning the same range; numbers said in words; phrases that name no range."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from custom_components.azure_openai_memory.lib.spoken_time import spoken_range

HOME = ZoneInfo("Europe/Amsterdam")
# Thursday 26 November 2026, 14:05:30 in the home (as the English tests).
NOW = datetime(2026, 11, 26, 14, 5, 30, tzinfo=HOME)
MICROSECOND = timedelta(microseconds=1)


def at(day: int, hour: int = 0, minute: int = 0, second: int = 0, month: int = 11) -> datetime:
    return datetime(2026, month, day, hour, minute, second, tzinfo=HOME)


def until(start: datetime, next_start: datetime) -> tuple[datetime, datetime]:
    return start, next_start - MICROSECOND


# The English cases' ranges, by the English words.
MEANS: dict[str, tuple[datetime, datetime]] = {
    "yesterday": until(at(25), at(26)),
    "today": (at(26), NOW),
    "this week": (at(23), NOW),
    "last week": until(at(16), at(23)),
    "the past week": (NOW - timedelta(days=7), NOW),
    "the last 2 days": (NOW - timedelta(days=2), NOW),
    "the past 24 hours": (NOW - timedelta(hours=24), NOW),
    "the last couple of days": (NOW - timedelta(days=2), NOW),
    "the last few hours": (NOW - timedelta(hours=3), NOW),
    "the past hour": (NOW - timedelta(hours=1), NOW),
    "the last 5 minutes": (NOW - timedelta(minutes=5), NOW),
    "the last 1.5 days": (NOW - timedelta(hours=36), NOW),
    "the last 14 days": (NOW - timedelta(days=14), NOW),
    "the past month": (at(26, 14, 5, 30, month=10), NOW),
    "the past three months": (at(26, 14, 5, 30, month=8), NOW),
    "this month": (at(1), NOW),
    "last month": until(at(1, month=10), at(1)),
    "this year": (datetime(2026, 1, 1, tzinfo=HOME), NOW),
    "last year": until(datetime(2025, 1, 1, tzinfo=HOME), datetime(2026, 1, 1, tzinfo=HOME)),
    "2 days ago": until(at(24), at(25)),
    "a day ago": until(at(25), at(26)),
    "the day before yesterday": until(at(24), at(25)),
    "three weeks ago": until(at(2), at(9)),
    "a month ago": until(at(1, month=10), at(1)),
    "this morning": until(at(26, 6), at(26, 12)),
    "this afternoon": (at(26, 12), NOW),
    "yesterday evening": until(at(25, 18), at(26)),
    "yesterday morning": until(at(25, 6), at(25, 12)),
    "yesterday afternoon": until(at(25, 12), at(25, 18)),
    "last night": until(at(25, 18), at(26, 6)),
    "on Tuesday": until(at(24), at(25)),
    "last monday": until(at(23), at(24)),
    "on Thursday": until(at(19), at(20)),
    "last weekend": until(at(21), at(23)),
    "in October": until(at(1, month=10), at(1)),
    "in November": (at(1), NOW),
    "last november": until(datetime(2025, 11, 1, tzinfo=HOME), datetime(2025, 12, 1, tzinfo=HOME)),
    "since October": (at(1, month=10), NOW),
    "on 2026-11-24": until(at(24), at(25)),
    "in 2026-10": until(at(1, month=10), at(1)),
    "yesterday and today": (at(25), NOW),
}

SAID: dict[str, list[tuple[str, str]]] = {
    "de": [
        ("Wie warm war es gestern?", "yesterday"),
        ("Was habe ich gestern gefragt?", "yesterday"),
        ("Wie warm ist es heute", "today"),
        ("Kudos diese Woche", "this week"),
        ("Wie warm war es letzte Woche?", "last week"),
        ("Kudos vergangene Woche", "last week"),
        ("Kudos in der letzten Woche", "the past week"),
        ("Kudos in der vergangenen Woche", "the past week"),
        ("Kudos in den letzten 2 Tagen", "the last 2 days"),
        ("Kudos in den letzten zwei Tagen", "the last 2 days"),
        ("in den vergangenen vierundzwanzig Stunden", "the past 24 hours"),
        ("die letzten paar Stunden", "the last few hours"),
        ("gestern Nachmittag", "yesterday afternoon"),
        ("in den letzten zwei Tagen", "the last couple of days"),
        ("die letzte Stunde", "the past hour"),
        ("letzte 24h", "the past 24 hours"),
        ("die letzten 24 Stunden", "the past 24 hours"),
        ("in den letzten 5 min", "the last 5 minutes"),
        ("die letzten 1,5 Tage", "the last 1.5 days"),
        ("die letzten vierzehn Tage", "the last 14 days"),
        ("der letzte Monat", "the past month"),
        ("die letzten drei Monate", "the past three months"),
        ("diesen Monat", "this month"),
        ("letzten Monat", "last month"),
        ("dieses Jahr", "this year"),
        ("letztes Jahr", "last year"),
        ("vor 2 Tagen", "2 days ago"),
        ("vor zwei Tagen", "2 days ago"),
        ("vor einem Tag", "a day ago"),
        ("vorgestern", "the day before yesterday"),
        ("vor drei Wochen", "three weeks ago"),
        ("vor einem Monat", "a month ago"),
        ("heute Morgen", "this morning"),
        ("heute Nachmittag", "this afternoon"),
        ("gestern Abend", "yesterday evening"),
        ("gestern Morgen", "yesterday morning"),
        ("letzte Nacht", "last night"),
        ("am Dienstag", "on Tuesday"),
        ("letzten Montag", "last monday"),
        ("worüber haben wir am Donnerstag gesprochen?", "on Thursday"),
        ("letztes Wochenende", "last weekend"),
        ("im Oktober", "in October"),
        ("im November", "in November"),
        ("letzten November", "last november"),
        ("seit Oktober", "since October"),
        ("am 2026-11-24", "on 2026-11-24"),
        ("im 2026-10", "in 2026-10"),
        ("gestern und heute", "yesterday and today"),
    ],
    "fr": [
        ("Quelle température faisait-il hier ?", "yesterday"),
        ("Il fait combien aujourd'hui", "today"),
        ("les bravos cette semaine", "this week"),
        ("Il faisait chaud la semaine dernière ?", "last week"),
        ("la semaine passée", "last week"),
        ("au cours de la dernière semaine", "the past week"),
        ("la semaine écoulée", "the past week"),
        ("les 2 derniers jours", "the last 2 days"),
        ("les deux derniers jours", "the last 2 days"),
        ("ces dernières vingt-quatre heures", "the past 24 hours"),
        ("les dernières heures", "the last few hours"),
        ("ces deux derniers jours", "the last couple of days"),
        ("hier après-midi", "yesterday afternoon"),
        ("la dernière heure", "the past hour"),
        ("les 24 dernières heures", "the past 24 hours"),
        ("dans les 5 dernières minutes", "the last 5 minutes"),
        ("les 1,5 derniers jours", "the last 1.5 days"),
        ("les quatorze derniers jours", "the last 14 days"),
        ("le dernier mois", "the past month"),
        ("les trois derniers mois", "the past three months"),
        ("ce mois-ci", "this month"),
        ("le mois dernier", "last month"),
        ("cette année", "this year"),
        ("l'année dernière", "last year"),
        ("il y a 2 jours", "2 days ago"),
        ("il y a deux jours", "2 days ago"),
        ("il y a un jour", "a day ago"),
        ("avant-hier", "the day before yesterday"),
        ("il y a trois semaines", "three weeks ago"),
        ("il y a un mois", "a month ago"),
        ("ce matin", "this morning"),
        ("cet après-midi", "this afternoon"),
        ("hier soir", "yesterday evening"),
        ("hier matin", "yesterday morning"),
        ("la nuit dernière", "last night"),
        ("mardi", "on Tuesday"),
        ("lundi dernier", "last monday"),
        ("de quoi avons-nous parlé jeudi ?", "on Thursday"),
        ("le week-end dernier", "last weekend"),
        ("en octobre", "in October"),
        ("en novembre", "in November"),
        ("novembre dernier", "last november"),
        ("depuis octobre", "since October"),
        ("le 2026-11-24", "on 2026-11-24"),
        ("en 2026-10", "in 2026-10"),
        ("hier et aujourd'hui", "yesterday and today"),
    ],
    "nl": [
        ("Hoe warm was het gisteren?", "yesterday"),
        ("Hoe warm is het vandaag", "today"),
        ("complimenten deze week", "this week"),
        ("Hoe warm was het vorige week?", "last week"),
        ("verleden week", "last week"),
        ("in de afgelopen week", "the past week"),
        ("de laatste week", "the past week"),
        ("de afgelopen 2 dagen", "the last 2 days"),
        ("de afgelopen twee dagen", "the last 2 days"),
        ("de afgelopen vierentwintig uur", "the past 24 hours"),
        ("de afgelopen paar dagen", "the last couple of days"),
        ("het afgelopen uur", "the past hour"),
        ("de afgelopen enkele uren", "the last few hours"),
        ("gistermiddag", "yesterday afternoon"),
        ("afgelopen 24h", "the past 24 hours"),
        ("de laatste 24 uur", "the past 24 hours"),
        ("in de afgelopen 5 min", "the last 5 minutes"),
        ("de afgelopen 1,5 dagen", "the last 1.5 days"),
        ("de afgelopen veertien dagen", "the last 14 days"),
        ("de afgelopen maand", "the past month"),
        ("de afgelopen drie maanden", "the past three months"),
        ("deze maand", "this month"),
        ("vorige maand", "last month"),
        ("dit jaar", "this year"),
        ("vorig jaar", "last year"),
        ("2 dagen geleden", "2 days ago"),
        ("twee dagen geleden", "2 days ago"),
        ("een dag geleden", "a day ago"),
        ("eergisteren", "the day before yesterday"),
        ("drie weken geleden", "three weeks ago"),
        ("een maand geleden", "a month ago"),
        ("vanochtend", "this morning"),
        ("vanmiddag", "this afternoon"),
        ("gisteravond", "yesterday evening"),
        ("gisterochtend", "yesterday morning"),
        ("afgelopen nacht", "last night"),
        ("op dinsdag", "on Tuesday"),
        ("vorige maandag", "last monday"),
        ("waar hadden we het donderdag over?", "on Thursday"),
        ("vorig weekend", "last weekend"),
        ("in oktober", "in October"),
        ("in november", "in November"),
        ("vorige november", "last november"),
        ("sinds oktober", "since October"),
        ("op 2026-11-24", "on 2026-11-24"),
        ("in 2026-10", "in 2026-10"),
        ("gisteren en vandaag", "yesterday and today"),
    ],
    "es": [
        ("¿Qué temperatura hizo ayer?", "yesterday"),
        ("Qué calor hace hoy", "today"),
        ("felicitaciones esta semana", "this week"),
        ("¿Hizo calor la semana pasada?", "last week"),
        ("en la última semana", "the past week"),
        ("durante la última semana", "the past week"),
        ("en los últimos 2 días", "the last 2 days"),
        ("en los últimos dos días", "the last 2 days"),
        ("las últimas veinticuatro horas", "the past 24 hours"),
        ("los últimos un par de días", "the last couple of days"),
        ("las últimas horas", "the last few hours"),
        ("la última hora", "the past hour"),
        ("las últimas 24 horas", "the past 24 hours"),
        ("en los últimos 5 minutos", "the last 5 minutes"),
        ("los últimos 1,5 días", "the last 1.5 days"),
        ("los últimos catorce días", "the last 14 days"),
        ("el último mes", "the past month"),
        ("los últimos tres meses", "the past three months"),
        ("este mes", "this month"),
        ("el mes pasado", "last month"),
        ("hace una semana", "last week"),
        ("este año", "this year"),
        ("el año pasado", "last year"),
        ("hace 2 días", "2 days ago"),
        ("hace dos días", "2 days ago"),
        ("hace un día", "a day ago"),
        ("anteayer", "the day before yesterday"),
        ("hace tres semanas", "three weeks ago"),
        ("hace un mes", "a month ago"),
        ("esta mañana", "this morning"),
        ("esta tarde", "this afternoon"),
        ("ayer por la noche", "yesterday evening"),
        ("ayer por la tarde", "yesterday afternoon"),
        ("ayer por la mañana", "yesterday morning"),
        ("anoche", "last night"),
        ("el martes", "on Tuesday"),
        ("el lunes pasado", "last monday"),
        ("¿de qué hablamos el jueves?", "on Thursday"),
        ("el fin de semana pasado", "last weekend"),
        ("en octubre", "in October"),
        ("en noviembre", "in November"),
        ("el pasado noviembre", "last november"),
        ("desde octubre", "since October"),
        ("el 2026-11-24", "on 2026-11-24"),
        ("en 2026-10", "in 2026-10"),
        ("ayer y hoy", "yesterday and today"),
    ],
    "it": [
        ("Che temperatura c'era ieri?", "yesterday"),
        ("Quanto fa caldo oggi", "today"),
        ("complimenti questa settimana", "this week"),
        ("Faceva caldo la settimana scorsa?", "last week"),
        ("la scorsa settimana", "last week"),
        ("nell'ultima settimana", "the past week"),
        ("l'ultima settimana", "the past week"),
        ("negli ultimi 2 giorni", "the last 2 days"),
        ("negli ultimi due giorni", "the last 2 days"),
        ("nelle ultime ventiquattro ore", "the past 24 hours"),
        ("negli ultimi un paio di giorni", "the last couple of days"),
        ("nelle ultime ore", "the last few hours"),
        ("nell'ultima ora", "the past hour"),
        ("ieri pomeriggio", "yesterday afternoon"),
        ("nelle ultime 24 ore", "the past 24 hours"),
        ("negli ultimi 5 minuti", "the last 5 minutes"),
        ("negli ultimi 1,5 giorni", "the last 1.5 days"),
        ("negli ultimi quattordici giorni", "the last 14 days"),
        ("nell'ultimo mese", "the past month"),
        ("negli ultimi tre mesi", "the past three months"),
        ("questo mese", "this month"),
        ("il mese scorso", "last month"),
        ("quest'anno", "this year"),
        ("l'anno scorso", "last year"),
        ("2 giorni fa", "2 days ago"),
        ("due giorni fa", "2 days ago"),
        ("un giorno fa", "a day ago"),
        ("l'altro ieri", "the day before yesterday"),
        ("tre settimane fa", "three weeks ago"),
        ("un mese fa", "a month ago"),
        ("stamattina", "this morning"),
        ("oggi pomeriggio", "this afternoon"),
        ("ieri sera", "yesterday evening"),
        ("ieri mattina", "yesterday morning"),
        ("la notte scorsa", "last night"),
        ("martedì", "on Tuesday"),
        ("lunedì scorso", "last monday"),
        ("di cosa abbiamo parlato giovedì?", "on Thursday"),
        ("lo scorso fine settimana", "last weekend"),
        ("a ottobre", "in October"),
        ("a novembre", "in November"),
        ("lo scorso novembre", "last november"),
        ("da ottobre", "since October"),
        ("il 2026-11-24", "on 2026-11-24"),
        ("nel 2026-10", "in 2026-10"),
        ("ieri e oggi", "yesterday and today"),
    ],
}

# Number words, as "the last N days" says them in each language: (words, days).
NUMBERS: dict[str, tuple[str, list[tuple[str, int]]]] = {
    "de": ("in den letzten {} Tagen", [
        ("zwei", 2), ("drei", 3), ("vier", 4), ("fünf", 5), ("sechs", 6), ("sieben", 7),
        ("acht", 8), ("neun", 9), ("zehn", 10), ("elf", 11), ("zwölf", 12),
        ("vierzehn", 14), ("zwanzig", 20), ("einunddreißig", 31), ("ein paar", 3),
        ("dreizehn", 13), ("neunzehn", 19),
    ]),
    "fr": ("les {} derniers jours", [
        ("deux", 2), ("trois", 3), ("quatre", 4), ("cinq", 5), ("six", 6), ("sept", 7),
        ("huit", 8), ("neuf", 9), ("dix", 10), ("onze", 11), ("douze", 12),
        ("quatorze", 14), ("vingt", 20), ("trente et un", 31), ("quelques", 3),
        ("dix-sept", 17), ("vingt-deux", 22),
    ]),
    "nl": ("de afgelopen {} dagen", [
        ("twee", 2), ("drie", 3), ("vier", 4), ("vijf", 5), ("zes", 6), ("zeven", 7),
        ("acht", 8), ("negen", 9), ("tien", 10), ("elf", 11), ("twaalf", 12),
        ("veertien", 14), ("twintig", 20), ("eenendertig", 31), ("enkele", 3),
        ("zeventien", 17), ("paar", 2),
    ]),
    "es": ("los últimos {} días", [
        ("dos", 2), ("tres", 3), ("cuatro", 4), ("cinco", 5), ("seis", 6), ("siete", 7),
        ("ocho", 8), ("nueve", 9), ("diez", 10), ("once", 11), ("doce", 12),
        ("catorce", 14), ("veinte", 20), ("treinta y uno", 31), ("unos pocos", 3),
        ("diecisiete", 17), ("veintidós", 22),
    ]),
    "it": ("negli ultimi {} giorni", [
        ("due", 2), ("tre", 3), ("quattro", 4), ("cinque", 5), ("sei", 6), ("sette", 7),
        ("otto", 8), ("nove", 9), ("dieci", 10), ("undici", 11), ("dodici", 12),
        ("quattordici", 14), ("venti", 20), ("trentuno", 31), ("alcuni", 3),
        ("diciassette", 17), ("ventidue", 22),
    ]),
}  # fmt: skip

NO_RANGE: dict[str, list[str]] = {
    "de": ["schalte das Küchenlicht ein", "Kudos in den letzten 0 Tagen", "nächsten Montag",
           "jeden Montag", "das letzte Lied", "was weißt du über die Vergangenheit",
           "heute Abend", "heute Nacht", "am 2026-12-24", "am 2026-02-30", "morgen früh"],
    "fr": ["allume la lumière de la cuisine", "les 0 derniers jours", "lundi prochain",
           "tous les lundis", "la dernière chanson", "que sais-tu du passé", "ce soir",
           "cette nuit", "le 2026-12-24", "le 2026-02-30", "demain matin"],
    "nl": ["zet het keukenlicht aan", "de afgelopen 0 dagen", "volgende maandag",
           "elke maandag", "het laatste liedje", "wat weet je over het verleden",
           "vanavond", "vannacht", "op 2026-12-24", "op 2026-02-30", "morgenochtend"],
    "es": ["enciende la luz de la cocina", "los últimos 0 días", "el próximo lunes",
           "todos los lunes", "la última canción", "qué sabes del pasado", "esta noche",
           "mañana por la mañana", "el 2026-12-24", "el 2026-02-30", "el lunes que viene"],
    "it": ["accendi la luce della cucina", "negli ultimi 0 giorni", "lunedì prossimo",
           "ogni lunedì", "l'ultima canzone", "cosa sai del passato", "stasera",
           "stanotte", "il 2026-12-24", "il 2026-02-30", "domani mattina"],
}  # fmt: skip


def _local(text: str, language: str) -> tuple[datetime, datetime]:
    found = spoken_range(text, NOW.timestamp(), HOME, language)
    assert found is not None, (language, text)
    return datetime.fromtimestamp(found.start, HOME), datetime.fromtimestamp(found.end, HOME)


@pytest.mark.parametrize(
    ("language", "text", "meaning"),
    [(language, text, meaning) for language, cases in SAID.items() for text, meaning in cases],
)
def test_what_a_phrase_means(language: str, text: str, meaning: str) -> None:
    assert _local(text, language) == MEANS[meaning]


@pytest.mark.parametrize(
    ("language", "words", "days"),
    [(language, words, days) for language, (_, cases) in NUMBERS.items() for words, days in cases],
)
def test_number_words(language: str, words: str, days: int) -> None:
    said = NUMBERS[language][0].format(words)
    found = spoken_range(said, NOW.timestamp(), HOME, language)
    assert found is not None, said
    assert found.end - found.start == days * 86400


@pytest.mark.parametrize(
    ("language", "text"),
    [(language, text) for language, texts in NO_RANGE.items() for text in texts],
)
def test_no_range(language: str, text: str) -> None:
    assert spoken_range(text, NOW.timestamp(), HOME, language) is None


def test_every_language_has_every_english_case() -> None:
    """At least the English tests' phrases, numbers and phrases without a range."""
    for language in ("de", "fr", "nl", "es", "it"):
        assert set(MEANS) == {meaning for _, meaning in SAID[language]}, language
        assert len(SAID[language]) >= 46, language
        assert len(NUMBERS[language][1]) >= 17, language
        assert len(NO_RANGE[language]) >= 11, language


def test_a_region_reads_its_language_and_english_stays_english() -> None:
    """de-CH is German; a turn in German still reads English words; an English turn
    does not read German ones."""
    assert _local("vorgestern", "de-CH") == MEANS["the day before yesterday"]
    assert _local("last week", "de") == MEANS["last week"]
    assert spoken_range("vorgestern", NOW.timestamp(), HOME, "en") is None
    assert spoken_range("vorgestern", NOW.timestamp(), UTC) is None
