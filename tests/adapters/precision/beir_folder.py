"""A small hand-written BEIR dataset folder for the precision-sweep tests (not NFCorpus).

64 English documents on 8 non-medical topics (exoplanets, bread baking, high-speed trains,
volcanoes, chess openings, beekeeping, jazz history, typography), 8 documents per topic on
different sub-aspects, 8 queries (one per topic) and graded qrels: grade 2 for the documents
that answer a query directly, grade 1 for partially relevant ones of the same topic, and two
judged non-relevant (grade 0) documents.  :func:`write_small_beir` writes it in the BEIR
layout: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv``.  Standard library only.
"""

from __future__ import annotations

import json
import os

__all__ = ["CORPUS", "QUERIES", "QRELS", "N_DOCS", "N_QUERIES", "write_small_beir"]

# (doc_id, title, text)
_DOCS = [
    # --- astronomy: exoplanets ---------------------------------------------------------------
    ("astro-01", "Detecting Exoplanets by the Transit Method",
     "When a planet passes in front of its star it blocks a tiny fraction of the starlight, "
     "producing a periodic dip in brightness. The depth of the dip reveals the planet's size "
     "relative to the star, and the time between dips gives its orbital period."),
    ("astro-02", "Radial Velocity and Stellar Wobble",
     "An orbiting planet tugs its host star back and forth, shifting the star's spectral lines "
     "toward blue and then red. Measuring this Doppler wobble gives a lower limit on the "
     "planet's mass, and it was how 51 Pegasi b was discovered in 1995."),
    ("astro-03", "The Kepler Space Telescope Survey",
     "NASA's Kepler telescope stared at one patch of sky in Cygnus and Lyra from 2009 to 2013, "
     "monitoring about 150,000 stars for transits. Its data led to the confirmation of more "
     "than 2,600 planets and showed that small planets are common in our galaxy."),
    ("astro-04", "The Habitable Zone Around Stars",
     "The habitable zone is the range of orbital distances at which a planet could keep liquid "
     "water on its surface. Around cool red dwarfs the zone lies very close to the star, while "
     "around hotter stars like the Sun it lies much farther out."),
    ("astro-05", "Photographing Planets with Direct Imaging",
     "Direct imaging captures light from the planet itself by blocking the glare of its star "
     "with a coronagraph or starshade. It works best for young, massive planets on wide orbits, "
     "which still glow brightly in infrared light from the heat of their formation."),
    ("astro-06", "Hot Jupiters and Their Tight Orbits",
     "Hot Jupiters are gas giants that orbit their stars in just a few days, far closer than "
     "Mercury is to the Sun. Their existence surprised astronomers and suggests that many giant "
     "planets migrate inward after forming in the colder outer disk."),
    ("astro-07", "Reading Exoplanet Atmospheres with Spectroscopy",
     "As a planet transits, some starlight filters through its atmosphere, and molecules absorb "
     "particular wavelengths. Comparing spectra in and out of transit reveals gases such as "
     "water vapour and carbon dioxide, which the James Webb Space Telescope detected on "
     "WASP-39b."),
    ("astro-08", "The Seven Planets of TRAPPIST-1",
     "TRAPPIST-1 is an ultracool red dwarf about 40 light years away with seven Earth-sized "
     "planets, all found by the transits they make. Several of them orbit within the star's "
     "habitable zone, making the system a prime target for atmospheric studies."),
    # --- cooking: bread baking ---------------------------------------------------------------
    ("bread-01", "Keeping a Sourdough Starter Alive",
     "A sourdough starter is a culture of wild yeast and lactic acid bacteria living in flour "
     "and water. Bakers feed it regularly with fresh flour and water, and it is ready to use "
     "when it doubles in volume within a few hours of feeding."),
    ("bread-02", "Why Kneading Develops Gluten",
     "Kneading stretches and aligns the wheat proteins glutenin and gliadin into an elastic "
     "gluten network that traps gas. A well kneaded dough passes the windowpane test, "
     "stretching thin enough to let light through without tearing."),
    ("bread-03", "Proofing Dough Before Baking",
     "During proofing, yeast ferments sugars and releases carbon dioxide that inflates the "
     "dough. An underproofed loaf bursts unevenly in the oven and an overproofed one collapses, "
     "while a gentle poke that leaves a dent springing back slowly shows the dough is ready."),
    ("bread-04", "Dough Hydration and Crumb Structure",
     "Hydration is the weight of water divided by the weight of flour, expressed as a "
     "percentage. Doughs around 60 percent hydration give a tight sandwich crumb, whereas "
     "ciabatta at 75 to 80 percent produces large irregular holes but is sticky to handle."),
    ("bread-05", "Steam and the Formation of Crust",
     "Steam in the first minutes of baking keeps the surface of the loaf soft so it can expand "
     "fully. Once the steam is vented, the surface dries, and Maillard reactions and "
     "caramelization turn the crust brown and crisp."),
    ("bread-06", "Scoring Loaves with a Lame",
     "Bakers slash the top of a loaf with a razor blade called a lame just before it goes into "
     "the oven. The cut controls where the bread expands, and a shallow angled cut on a "
     "baguette lifts into a raised edge known as the ear."),
    ("bread-07", "Choosing Flour by Protein Content",
     "Bread flour typically contains 12 to 14 percent protein, which forms more gluten than the "
     "8 to 10 percent in cake flour. Whole wheat flour includes the bran and germ, which absorb "
     "more water and cut through gluten strands, giving a denser loaf."),
    ("bread-08", "The Role of Salt in Bread",
     "Salt, usually about 2 percent of the flour weight, tightens the gluten network and slows "
     "yeast fermentation. Bread made without salt tastes flat, rises too quickly and often "
     "bakes with a pale crust."),
    # --- rail transport: high-speed trains ---------------------------------------------------
    ("rail-01", "Japan's Shinkansen Opens in 1964",
     "The Tokaido Shinkansen between Tokyo and Osaka opened in October 1964, just before the "
     "Tokyo Olympics. It was the world's first dedicated high-speed railway, and its trains "
     "have carried billions of passengers without a single fatal derailment or collision."),
    ("rail-02", "The TGV Speed Record of 2007",
     "In April 2007 a specially modified French TGV trainset reached 574.8 kilometres per hour "
     "on the LGV Est line. The record still stands for conventional wheeled trains, although "
     "regular services run at a maximum of 320 kilometres per hour."),
    ("rail-03", "How Maglev Trains Float Above Tracks",
     "Magnetic levitation trains are lifted and propelled by electromagnets, so no wheels touch "
     "the guideway. Without rolling friction they can go faster than wheeled trains, and "
     "Japan's L0 series maglev reached 603 kilometres per hour in a 2015 test run."),
    ("rail-04", "Tilting Trains on Curved Routes",
     "Tilting trains lean into curves, reducing the sideways force that passengers feel, so "
     "they can take existing bends faster. Italy's Pendolino and Britain's Class 390 use "
     "tilting to run quickly on older lines without the cost of building new track."),
    ("rail-05", "Powering Trains Through Overhead Catenary",
     "Most high-speed trains draw electricity from an overhead wire through a pantograph on the "
     "roof, commonly at 25 kilovolts alternating current. The contact wire is kept under high "
     "tension so that the pantograph stays in steady contact without bouncing."),
    ("rail-06", "In-Cab Signalling for High Speeds",
     "Above roughly 200 kilometres per hour drivers cannot reliably read lineside signals, so "
     "high-speed lines display speed limits inside the cab. The European Train Control System "
     "supervises the train continuously and brakes automatically if the driver exceeds the "
     "permitted speed."),
    ("rail-07", "Designing Track for High-Speed Lines",
     "High-speed lines need very gentle curves, with radii often above seven kilometres, and "
     "only modest gradients. Many are built on concrete slab track, with long viaducts and "
     "tunnels that keep the alignment straight across hilly terrain."),
    ("rail-08", "China's Expanding High-Speed Network",
     "China opened the Beijing to Tianjin intercity line in 2008 and has since built the "
     "world's largest high-speed network, exceeding 40,000 kilometres. Its Fuxing trains run "
     "between Beijing and Shanghai at up to 350 kilometres per hour."),
    # --- volcanoes ---------------------------------------------------------------------------
    ("volc-01", "Shield Volcanoes and Stratovolcanoes",
     "Shield volcanoes such as Mauna Loa are built from runny basalt lava and have broad, "
     "gentle slopes. Stratovolcanoes like Mount Fuji form steep cones from alternating layers "
     "of lava, ash and cinders, and they tend to erupt more explosively."),
    ("volc-02", "The Danger of Pyroclastic Flows",
     "A pyroclastic flow is a fast avalanche of hot gas, ash and rock that races down a "
     "volcano's flanks. It can exceed 100 kilometres per hour and 700 degrees Celsius, and such "
     "flows buried Pompeii and Herculaneum when Vesuvius erupted in 79 AD."),
    ("volc-03", "How Scientists Forecast Volcanic Eruptions",
     "Volcanologists watch for rising magma with seismometers that record swarms of small "
     "earthquakes beneath a volcano. Satellite radar and GPS measure swelling of the ground, "
     "and a rise in sulfur dioxide emissions can signal that an eruption is approaching."),
    ("volc-04", "Volcanic Eruptions and Global Cooling",
     "Large eruptions inject sulfur dioxide into the stratosphere, where it forms sulfate "
     "aerosols that reflect sunlight. The 1815 eruption of Tambora in Indonesia cooled the "
     "Northern Hemisphere so much that 1816 became known as the Year Without a Summer."),
    ("volc-05", "Volcanoes of the Pacific Ring of Fire",
     "About three quarters of the world's active volcanoes lie around the Pacific Ocean, where "
     "oceanic plates sink beneath neighbouring plates. Water released from the sinking slab "
     "lowers the melting point of the mantle above it and generates magma."),
    ("volc-06", "Hotspot Volcanoes and the Hawaiian Chain",
     "Hawaii's volcanoes sit far from any plate boundary, above a plume of hot mantle rock. As "
     "the Pacific Plate moves northwest over the stationary hotspot, a chain of islands forms, "
     "with the oldest islands farthest from the active volcanoes."),
    ("volc-07", "Lahars: Volcanic Mudflows",
     "A lahar is a mudflow of volcanic debris and water, often triggered when an eruption melts "
     "snow and ice on a summit. In 1985 lahars from Nevado del Ruiz in Colombia buried the town "
     "of Armero, killing more than 20,000 people."),
    ("volc-08", "Measuring Eruptions with the Explosivity Index",
     "The Volcanic Explosivity Index rates eruptions from 0 to 8, based mainly on the volume of "
     "material ejected. Each step is roughly a tenfold increase, so a VEI 6 eruption such as "
     "Pinatubo in 1991 ejected about ten times more than a VEI 5 eruption."),
    # --- chess openings ----------------------------------------------------------------------
    ("chess-01", "The Ruy López and Its Long History",
     "The Ruy López begins 1.e4 e5 2.Nf3 Nc6 3.Bb5, attacking the knight that defends the e5 "
     "pawn. Named after a sixteenth-century Spanish priest, it remains one of the most deeply "
     "analysed openings and a favourite at world championship level."),
    ("chess-02", "The Sicilian Defence Against 1.e4",
     "Black answers 1.e4 with 1...c5 in the Sicilian Defence, fighting for the centre from the "
     "side and creating an unbalanced position. Popular variations include the Najdorf and the "
     "Dragon, and the opening scores well for Black in top-level play."),
    ("chess-03", "Understanding the Queen's Gambit",
     "After 1.d4 d5 2.c4, White offers a pawn to lure Black's d-pawn away from the centre. It "
     "is not a true gambit, because White can usually regain the pawn if Black accepts, and "
     "declining with 2...e6 leads to solid classical positions."),
    ("chess-04", "Basic Principles of the Opening",
     "Good opening play develops the knights and bishops quickly, controls the central squares "
     "and castles the king to safety. Beginners are advised not to move the same piece twice "
     "without reason and not to bring the queen out too early."),
    ("chess-05", "The Hypermodern King's Indian Defence",
     "In the King's Indian Defence Black allows White a broad pawn centre, fianchettoes the "
     "king's bishop on g7 and strikes back later with a pawn break. Garry Kasparov and Bobby "
     "Fischer both used it to play for a win with the black pieces."),
    ("chess-06", "Sacrificing Material in Gambit Openings",
     "A gambit offers a pawn or more in exchange for rapid development or an attack. The King's "
     "Gambit, 1.e4 e5 2.f4, was wildly popular in the nineteenth century, but modern engines "
     "show that accurate defence lets Black keep the extra material."),
    ("chess-07", "Computer Preparation in Modern Openings",
     "Top players now prepare openings with engines and huge game databases, sometimes checking "
     "new moves more than twenty moves deep. This has led many of them to choose quieter lines, "
     "such as the Berlin Defence, that are very hard to refute."),
    ("chess-08", "The Solid Caro-Kann Defence",
     "The Caro-Kann starts 1.e4 c6, preparing ...d5 to challenge White's centre with pawn "
     "support. It gives Black a sound pawn structure and a free light-squared bishop, at the "
     "cost of slightly slower development than more aggressive defences."),
    # --- beekeeping --------------------------------------------------------------------------
    ("bee-01", "Inside a Langstroth Beehive",
     "The Langstroth hive, patented in 1852, uses removable wooden frames separated by the bee "
     "space of about nine millimetres. Bees leave this gap open instead of filling it with comb "
     "or propolis, so beekeepers can lift out frames without destroying the comb."),
    ("bee-02", "The Queen Bee and Colony Reproduction",
     "A colony has a single queen that can lay up to 2,000 eggs a day in spring. Workers raise "
     "new queens by feeding selected larvae royal jelly, and when the colony becomes crowded "
     "the old queen leaves with a swarm."),
    ("bee-03", "Controlling Varroa Mites in Colonies",
     "The Varroa destructor mite feeds on developing bees and spreads viruses such as deformed "
     "wing virus. Beekeepers monitor infestations with sugar roll or alcohol wash counts and "
     "treat hives with oxalic acid, formic acid or other approved miticides."),
    ("bee-04", "Harvesting and Extracting Honey",
     "Honey is ready to harvest when the bees have capped the cells with wax, showing a water "
     "content below about 18 percent. Beekeepers slice off the cappings, spin the frames in a "
     "centrifugal extractor and strain the honey before bottling."),
    ("bee-05", "How the Waggle Dance Shares Directions",
     "A forager returning to the hive performs a waggle dance to tell her nestmates where "
     "flowers are. The angle of the waggle run from vertical indicates the direction relative "
     "to the sun, and its duration encodes the distance."),
    ("bee-06", "Helping Colonies Survive the Winter",
     "Honeybees survive winter by forming a tight cluster and shivering their flight muscles to "
     "generate heat. A colony in a cold climate may need 25 to 35 kilograms of stored honey, "
     "and colonies with heavy mite loads in autumn often die before spring."),
    ("bee-07", "Why Beekeepers Use a Smoker",
     "Puffs of cool smoke mask the alarm pheromone that guard bees release when the hive is "
     "disturbed. The smoke also prompts bees to gorge on honey, which makes them calmer and "
     "less likely to sting while the beekeeper inspects the frames."),
    ("bee-08", "Drones and the Mating Flight",
     "Drones are male bees that neither sting nor collect nectar, and their role is to mate "
     "with virgin queens. Mating happens in flight at drone congregation areas, and a queen "
     "mates with a dozen or more drones within a few days."),
    # --- jazz history ------------------------------------------------------------------------
    ("jazz-01", "Jazz Origins in New Orleans",
     "Jazz emerged in New Orleans in the early twentieth century, blending blues, ragtime, "
     "brass band music and Caribbean rhythms. Congo Square, where enslaved Africans gathered to "
     "play music and dance on Sundays, is often cited as one of its roots."),
    ("jazz-02", "Louis Armstrong and the Hot Five",
     "Louis Armstrong's Hot Five and Hot Seven recordings of 1925 to 1928 shifted jazz from "
     "collective ensemble playing toward the improvising soloist. His trumpet solo on West End "
     "Blues and his scat singing influenced generations of musicians."),
    ("jazz-03", "The Big Band Swing Era",
     "During the 1930s and early 1940s, big bands led by Duke Ellington, Count Basie and Benny "
     "Goodman made swing America's popular dance music. Their arrangements set sections of "
     "saxophones, trumpets and trombones against each other in call and response."),
    ("jazz-04", "Bebop Breaks from Dance Music",
     "In the mid-1940s Charlie Parker and Dizzy Gillespie developed bebop in small New York "
     "clubs. Fast tempos, complex chord substitutions and virtuosic improvisation made it music "
     "for close listening rather than for dancing, unlike the swing of the big bands."),
    ("jazz-05", "Modal Jazz and Kind of Blue",
     "Miles Davis recorded Kind of Blue in 1959, building tunes such as So What on a few scales "
     "rather than rapid chord changes. This modal approach gave soloists like John Coltrane and "
     "Bill Evans more room to explore, and the album became the best-selling jazz record."),
    ("jazz-06", "Ornette Coleman and Free Jazz",
     "Ornette Coleman's 1960 album Free Jazz featured two quartets improvising at once without "
     "fixed chord progressions. The movement abandoned conventional harmony and regular metre, "
     "and it divided critics between those who heard liberation and those who heard noise."),
    ("jazz-07", "Jazz Fusion Meets Rock",
     "Around 1970, Miles Davis's Bitches Brew combined jazz improvisation with electric "
     "guitars, keyboards and rock rhythms. Bands such as Weather Report and the Mahavishnu "
     "Orchestra followed, bringing jazz to large rock audiences."),
    ("jazz-08", "Blue Note Records and Hard Bop",
     "Founded in 1939 by Alfred Lion, Blue Note Records became the home of hard bop in the "
     "1950s and 1960s. Artists like Art Blakey and Horace Silver added gospel and blues feeling "
     "to bebop, and Reid Miles's bold covers defined the label's look."),
    # --- typography --------------------------------------------------------------------------
    ("type-01", "Serif and Sans-Serif Typefaces",
     "Serif typefaces such as Times New Roman have small strokes at the ends of letters, while "
     "sans-serif faces such as Helvetica lack them. Serifs are traditional in printed books, "
     "and sans-serif faces became common on early screens whose low resolution blurred fine "
     "details."),
    ("type-02", "Kerning Between Letter Pairs",
     "Kerning adjusts the space between specific pairs of letters, such as A and V, whose "
     "shapes leave awkward gaps. Fonts store kerning tables, and designers also adjust kerning "
     "by hand in large headlines and logos."),
    ("type-03", "Leading and Line Spacing",
     "Leading is the vertical distance between the baselines of successive lines of text, named "
     "after the strips of lead that printers placed between lines of metal type. Body text is "
     "often set with leading of about 120 to 145 percent of the font size to keep it readable."),
    ("type-04", "Gutenberg and Movable Metal Type",
     "Around 1450 Johannes Gutenberg in Mainz developed movable metal type cast in a hand mould, "
     "together with an oil-based ink and a printing press. His Bible, set in a blackletter "
     "typeface, showed that books could be produced in quantity."),
    ("type-05", "The Story of Helvetica",
     "Helvetica was designed in 1957 by Max Miedinger and Eduard Hoffmann at the Haas type "
     "foundry in Münchenstein, Switzerland, originally as Neue Haas Grotesk. Its neutral, even "
     "forms made it a favourite for corporate logos and transit signage around the world."),
    ("type-06", "Measuring Type in Points and Ems",
     "Digital type is measured in points, with 72 points to the inch in the PostScript "
     "standard. An em is a unit equal to the current font size, and spaces such as em dashes "
     "and paragraph indents are often defined relative to it."),
    ("type-07", "OpenType and Variable Fonts",
     "OpenType, developed by Microsoft and Adobe, stores glyphs, ligatures and alternate "
     "characters in one cross-platform font file. Variable fonts, added to the format in 2016, "
     "let a single file interpolate continuously along axes such as weight and width."),
    ("type-08", "X-Height and Legibility at Small Sizes",
     "The x-height is the height of lowercase letters without ascenders, such as x and o. "
     "Typefaces with a large x-height, like Verdana, stay legible at small sizes and on "
     "screens, while a small x-height gives a more elegant but less readable page."),
]

CORPUS: dict = {doc_id: {"title": title, "text": text} for doc_id, title, text in _DOCS}

QUERIES: dict = {
    "q1": "How does the transit method reveal the size of an exoplanet?",
    "q2": "How can I tell when my bread dough has finished proofing?",
    "q3": "What is the fastest speed ever reached by a train?",
    "q4": "How do scientists predict when a volcano is about to erupt?",
    "q5": "Which defences can Black play against White's first move 1.e4?",
    "q6": "How do beekeepers treat a hive infested with varroa mites?",
    "q7": "Who created bebop and how was it different from swing?",
    "q8": "How much space should I leave between lines of body text?",
}

# {query_id: {doc_id: grade}}; grade 2 answers directly, 1 is partial, 0 judged non-relevant.
QRELS: dict = {
    "q1": {"astro-01": 2, "astro-03": 1, "astro-07": 1, "astro-08": 1, "astro-04": 0},
    "q2": {"bread-03": 2, "bread-01": 1, "bread-08": 1},
    "q3": {"rail-02": 2, "rail-03": 2, "rail-08": 1, "rail-06": 1},
    "q4": {"volc-03": 2, "volc-05": 1, "volc-08": 1, "volc-06": 1},
    "q5": {"chess-02": 2, "chess-08": 2, "chess-01": 1, "chess-06": 1, "chess-07": 1},
    "q6": {"bee-03": 2, "bee-06": 1, "bee-07": 1, "bee-05": 0},
    "q7": {"jazz-04": 2, "jazz-03": 1, "jazz-08": 1},
    "q8": {"type-03": 2, "type-06": 1, "type-08": 1, "type-02": 1},
}

N_DOCS = 64
N_QUERIES = 8


def _write_jsonl(path: str, rows) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_small_beir(folder) -> str:
    """Write the 64-document BEIR folder into ``folder`` (created if missing); return its path."""
    folder = os.fspath(folder)
    os.makedirs(os.path.join(folder, "qrels"), exist_ok=True)
    _write_jsonl(os.path.join(folder, "corpus.jsonl"),
                 ({"_id": d, "title": v["title"], "text": v["text"]} for d, v in CORPUS.items()))
    _write_jsonl(os.path.join(folder, "queries.jsonl"),
                 ({"_id": q, "text": t} for q, t in QUERIES.items()))
    with open(os.path.join(folder, "qrels", "test.tsv"), "w", encoding="utf-8",
              newline="\n") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for qid, judged in QRELS.items():
            for doc_id, grade in judged.items():
                fh.write(f"{qid}\t{doc_id}\t{int(grade)}\n")
    return folder
