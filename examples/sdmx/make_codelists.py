"""Writes codelists.xml, the SDMX-ML structure file of the example (run once; committed).

The codes follow the IMF World Economic Outlook's naming; the file is the project's own.
"""

from pathlib import Path

import sdmx
from sdmx import model as m
from sdmx.message import StructureMessage

INDICATORS = {
    "NGDP_RPCH": "Gross domestic product, constant prices, percent change",
    "NGDPD": "Gross domestic product, current prices, U.S. dollars (billions)",
    "NGDPDPC": "Gross domestic product per capita, current prices, U.S. dollars",
    "PPPGDP": "Gross domestic product, current prices, purchasing power parity",
    "NGDP_D": "Gross domestic product deflator, index",
    "PCPIPCH": "Inflation, average consumer prices, percent change",
    "PCPIEPCH": "Inflation, end of period consumer prices, percent change",
    "LUR": "Unemployment rate, percent of total labor force",
    "LP": "Population, Persons for countries / Index for country groups",
    "GGXWDG_NGDP": "General government gross debt, percent of GDP",
    "GGXCNL_NGDP": "General government net lending/borrowing, percent of GDP",
    "GGR_NGDP": "General government revenue, percent of GDP",
    "BCA_NGDPD": "Current account balance, percent of GDP",
    "TM_RPCH": "Volume of imports of goods and services, percent change",
    "TX_RPCH": "Volume of exports of goods and services, percent change",
}
COUNTRIES = {
    "MEX": "Mexico",
    "USA": "United States",
    "BRA": "Brazil",
    "ARG": "Argentina",
    "CAN": "Canada",
    "DEU": "Germany",
    "FRA": "France",
    "ITA": "Italy",
    "GBR": "United Kingdom",
    "JPN": "Japan",
    "CHN": "China",
    "IND": "India",
    "ZAF": "South Africa",
    "NGA": "Nigeria",
    "KEN": "Kenya",
    "EGY": "Egypt",
    "TUR": "Turkiye",
    "IDN": "Indonesia",
}
FREQ = {"A": "Annual", "Q": "Quarterly", "M": "Monthly"}


def main() -> None:
    msg = StructureMessage()
    agency = m.Agency(id="QE")
    for cl_id, name, codes in (
        ("CL_INDICATOR", "WEO indicator", INDICATORS),
        ("CL_COUNTRY", "Country", COUNTRIES),
        ("CL_FREQ", "Frequency", FREQ),
    ):
        cl = m.Codelist(id=cl_id, maintainer=agency, version="1.0", is_final=True, name=name)
        for code, label in codes.items():
            cl.append(m.Code(id=code, name=label))
        msg.add(cl)
    out = Path(__file__).with_name("codelists.xml")
    out.write_bytes(sdmx.to_xml(msg, pretty_print=True))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
