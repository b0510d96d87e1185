"""Results for people: tables now; plots, HTML and exports beside them."""
