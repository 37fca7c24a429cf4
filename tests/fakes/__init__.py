"""Test doubles that speak real protocols on 127.0.0.1 (no network beyond the loopback)."""
